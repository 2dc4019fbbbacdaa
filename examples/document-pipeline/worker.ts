/**
 * Worker of the document pipeline (examples/README.md): splits a fetched document into a fixed
 * number of chunks, and merges the `llm` summaries of the chunks into one summary. When the run's
 * input names an `auditUrl`, each handler reports every execution of itself there (the tests count
 * these side effects to prove a completed step never runs again).
 */
import { defineWorker, NonRetryableError, type StepContext } from "drover/sdk";

async function audit(ctx: StepContext): Promise<void> {
  const url = (ctx.runInput as { auditUrl?: string } | null)?.auditUrl;
  if (url) await fetch(`${url}/${ctx.executionId}/${ctx.stepId}`, { method: "POST", signal: ctx.signal });
}

export default defineWorker({
  steps: {
    "chunk-text": async (ctx, input: { text: string; parts: number }) => {
      if (typeof input.text !== "string" || !(input.parts >= 1))
        throw new NonRetryableError("chunk-text needs { text: string, parts >= 1 }");
      await audit(ctx);
      const words = input.text.split(/\s+/).filter(Boolean);
      const per = Math.max(1, Math.ceil(words.length / input.parts));
      const chunks = Array.from(
        { length: input.parts },
        (_, i) => words.slice(i * per, (i + 1) * per).join(" ") || "(empty)",
      );
      ctx.logger.info("chunked", { words: words.length, parts: input.parts });
      return { chunks, words: words.length };
    },
    "merge-summaries": async (ctx, input: { title: string; summaries: string[] }) => {
      await audit(ctx);
      return {
        title: input.title,
        summary: input.summaries.map((s, i) => `${i + 1}. ${s}`).join("\n"),
        parts: input.summaries.length,
      };
    },
  },
});
