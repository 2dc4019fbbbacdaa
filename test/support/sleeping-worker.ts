import { randomBytes } from "node:crypto";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";

const ROOT = resolve(import.meta.dirname, "../..");

/** A `drover runtimes -o json` row, as the worker-version tests read it. */
export type RuntimeRow = {
  runtimeInstanceId: string;
  worker: { version: string; pinned: boolean; draining: boolean; pinnedRuns: number } | null;
};

/** The tenant's worker at one version: `work` sleeps `ms` and answers with the version that ran it. */
const source = (tag: string) => `import { defineWorker } from "../../sdk/index.ts";
export default defineWorker({
  steps: {
    work: async (_ctx, input: { ms: number }) => {
      await new Promise((r) => setTimeout(r, input.ms));
      return { ran: "${tag}" };
    },
  },
});
`;

/**
 * A tenant worker module in a fresh directory under `.run` (the worker e2e tests): `write(tag)`
 * deploys the version `tag` by rewriting the module; `dag` runs one `work` step of `input.ms`.
 */
export function sleepingWorker(name: string) {
  const dir = join(ROOT, ".run", `${name}-e2e-${randomBytes(4).toString("hex")}`);
  const module = join(dir, "worker.ts");
  return {
    module,
    dag: { name, steps: [{ id: "work", kind: "custom", handler: "work", params: { ms: { $ref: "input.ms" } } }] },
    write(tag: string): void {
      mkdirSync(dir, { recursive: true });
      writeFileSync(module, source(tag));
    },
    remove(): void {
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
