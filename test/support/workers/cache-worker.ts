/**
 * Worker of the step cache host test: `price` and `price-alt` append one line per execution to the
 * file named by CACHE_COUNT_FILE (a side effect outside drover) and answer from their input, naming
 * the worker version that computed them; `price` fails non-retryably when its input says `fail`, and
 * pads its output by `padBytes`. cache-worker-v2.ts is the same steps from another module file (so
 * another worker version).
 */
import { appendFileSync } from "node:fs";
import { defineWorker, NonRetryableError } from "../../../sdk/index.ts";

const count = (what: string) => {
  const file = process.env.CACHE_COUNT_FILE;
  if (file) appendFileSync(file, `${what}\n`);
};

export const priceWorker = (by: string) =>
  defineWorker({
    steps: {
      price: (ctx, input: { sku: string; fail?: boolean; padBytes?: number }) => {
        count(`price:${input.sku}`);
        if (input.fail) throw new NonRetryableError(`no price for ${input.sku}`);
        const pad: Record<string, string> = input.padBytes ? { pad: "x".repeat(input.padBytes) } : {};
        return { sku: input.sku, cents: input.sku.length * 100, by, ...pad };
      },
      "price-alt": (ctx, input: { sku: string }) => {
        count(`price-alt:${input.sku}`);
        return { sku: input.sku, cents: input.sku.length * 100, by };
      },
    },
  });

export default priceWorker("v1");
