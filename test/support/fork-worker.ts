/**
 * Worker of the fork host test: `count` appends one line per execution of a step to the file named
 * by FORK_COUNT_FILE (a side effect outside drover) and fails non-retryably when its params say
 * `failWhen` and the run input has that flag set.
 */
import { appendFileSync } from "node:fs";
import { defineWorker, NonRetryableError } from "../../sdk/index.ts";

export default defineWorker({
  steps: {
    count: (ctx, params: { failWhen?: string }) => {
      const file = process.env.FORK_COUNT_FILE;
      if (file) appendFileSync(file, `${ctx.stepId}\n`);
      const flags = (ctx.runInput ?? {}) as Record<string, unknown>;
      if (params.failWhen && flags[params.failWhen] === true)
        throw new NonRetryableError(`${ctx.stepId} fails while input.${params.failWhen} is set`);
      return { step: ctx.stepId };
    },
  },
});
