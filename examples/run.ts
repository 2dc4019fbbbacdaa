/**
 * Runs one example against `make run`: `node --import tsx examples/run.ts <example> '<input JSON>'`.
 * Submits the example's DAG with the input as its example tenant (config/drover.local.json), follows
 * the run until it ends and prints its output. Reads the API port from .run/services/api.port.
 */
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { setTimeout as delay } from "node:timers/promises";

const ROOT = resolve(import.meta.dirname, "..");
const TOKENS: Record<string, string> = {
  "document-pipeline": "dev-token-docs-example-01",
  "data-pipeline": "dev-token-data-example-01",
  // Built-in kinds only: any tenant runs it; the data example's tenant is used.
  "control-flow": "dev-token-data-example-01",
  "control-flow-map": "dev-token-data-example-01",
  "control-flow-child": "dev-token-data-example-01",
};
const [name = "", inputText = "{}"] = process.argv.slice(2);
const token = TOKENS[name];
if (!token) {
  console.error(`usage: examples/run.ts <${Object.keys(TOKENS).join("|")}> '<input JSON>'`);
  process.exit(2);
}
const dir = process.env.DROVER_SERVICES_DIR ?? resolve(ROOT, ".run/services");
const api = `http://127.0.0.1:${readFileSync(resolve(dir, "api.port"), "utf8").trim()}`;
const dag = JSON.parse(readFileSync(resolve(ROOT, "examples", name, "dag.json"), "utf8")) as unknown;
const headers = { authorization: `Bearer ${token}`, "content-type": "application/json" };
const submitted = await fetch(`${api}/v1/runs`, {
  method: "POST",
  headers,
  body: JSON.stringify({ dag, input: JSON.parse(inputText) as unknown }),
});
const run = (await submitted.json()) as { sharedRunId?: string; error?: unknown };
if (!run.sharedRunId) {
  console.error(JSON.stringify(run, null, 2));
  process.exit(1);
}
console.log(`submitted ${run.sharedRunId}`);
for (;;) {
  const view = (await (await fetch(`${api}/v1/runs/${run.sharedRunId}`, { headers })).json()) as {
    status: string;
    lastReason: string | null;
    output: unknown;
  };
  if (["completed", "failed", "cancelled", "rejected"].includes(view.status)) {
    console.log(`${view.status}${view.lastReason ? ` (${view.lastReason})` : ""}`);
    console.log(JSON.stringify(view.output, null, 2));
    process.exit(view.status === "completed" ? 0 : 1);
  }
  await delay(250);
}
