/**
 * Worker of the map e2e test: `tally` appends `start <n> <pid> <ms>` and `end <n> <pid> <ms>` lines to
 * the file its params name (a side effect outside drover, to count executions and concurrency),
 * sleeps `ms` in between, fails non-retryably when `fail` is true, and returns `{n, sq}`.
 */
import { appendFileSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";
import { defineWorker, NonRetryableError } from "../../sdk/index.ts";

export default defineWorker({
  steps: {
    tally: async (_ctx, p: { file: string; n: number; ms?: number; fail?: boolean }) => {
      appendFileSync(p.file, `start ${p.n} ${process.pid} ${Date.now()}\n`);
      await sleep(p.ms ?? 40);
      appendFileSync(p.file, `end ${p.n} ${process.pid} ${Date.now()}\n`);
      if (p.fail === true) throw new NonRetryableError(`item ${p.n} fails by design`);
      return { n: p.n, sq: p.n * p.n };
    },
  },
});
