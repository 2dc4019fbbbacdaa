/**
 * Worker of the data pipeline (examples/README.md): hashes input records, normalises them, and
 * signs the batch with a tenant secret (the signature is the output; the key never is). When the
 * run's input names an `auditUrl`, each handler reports every execution of itself there.
 */
import { createHash, createHmac } from "node:crypto";
import { defineWorker, NonRetryableError, type StepContext } from "drover/sdk";

interface Item {
  id: string;
  name: string;
  amount: number;
}

async function audit(ctx: StepContext): Promise<void> {
  const url = (ctx.runInput as { auditUrl?: string } | null)?.auditUrl;
  if (url) await fetch(`${url}/${ctx.executionId}/${ctx.stepId}`, { method: "POST", signal: ctx.signal });
}

export default defineWorker({
  steps: {
    "hash-records": async (ctx, input: { records: Item[] }) => {
      if (!Array.isArray(input.records)) throw new NonRetryableError("hash-records needs { records: [...] }");
      await audit(ctx);
      return {
        records: input.records.map((r) => ({
          ...r,
          sha256: createHash("sha256").update(JSON.stringify(r)).digest("hex"),
        })),
      };
    },
    normalize: async (ctx, input: { records: (Item & { sha256: string })[] }) => {
      await audit(ctx);
      const records = input.records.map((r) => ({
        ...r,
        name: r.name.trim().toUpperCase(),
        amount: Math.round(r.amount * 100) / 100,
      }));
      return { records, total: records.reduce((a, r) => a + r.amount, 0), count: records.length };
    },
    sign: async (ctx, input: { batch: unknown; key: string }) => {
      await audit(ctx);
      const signature = createHmac("sha256", input.key).update(JSON.stringify(input.batch)).digest("hex");
      return { signature, algorithm: "hmac-sha256" };
    },
  },
});
