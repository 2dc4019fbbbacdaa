/**
 * Version 2 of the step cache host test worker (the same steps, other code): `price` and `price-alt` append one line per execution to the
 * file named by CACHE_COUNT_FILE (a side effect outside drover) and answer from their input;
 * `price` fails non-retryably when its input says `fail`, and pads its output by `padBytes`.
 */
import { appendFileSync } from "node:fs";
import { defineWorker, NonRetryableError } from "../../../sdk/index.ts";

const count = (what: string) => {
  const file = process.env.CACHE_COUNT_FILE;
  if (file) appendFileSync(file, `${what}\n`);
};

export default defineWorker({
  steps: {
    price: (ctx, input: { sku: string; fail?: boolean; padBytes?: number }) => {
      count(`price:${input.sku}`);
      if (input.fail) throw new NonRetryableError(`no price for ${input.sku}`);
      const pad: Record<string, string> = input.padBytes ? { pad: "x".repeat(input.padBytes) } : {};
      return { sku: input.sku, cents: input.sku.length * 100, by: "v2", ...pad };
    },
    "price-alt": (ctx, input: { sku: string }) => {
      count(`price-alt:${input.sku}`);
      return { sku: input.sku, cents: input.sku.length * 100, by: "v2" };
    },
  },
});
