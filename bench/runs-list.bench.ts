/**
 * The run list (`GET /v1/runs`) over a tenant with RUNS runs, against a private nats-server and
 * FerretDB (run with tsx: `make bench`). The read models are written directly (the run documents,
 * the count and the pages, the pages through the projector's own pure `appendToRunList`): this
 * measures listing, not projecting (bench/projector.bench.ts measures that). Then, over real HTTP
 * through the API:
 *
 *  - runs_list_first_page: the newest page (limit 20), p50/p99 of SAMPLES requests;
 *  - runs_list_deep_page: a page RUNS − 200 runs deep (cursor 200: `next` is an ordinal bound), same;
 *  - runs_list_filtered_page: the first page filtered by status (every run matches), same.
 * The target (issue 12) is < 100 ms for the first and the deep page: the process exits 1 when a p50 misses it.
 */
import {
  CHECKPOINT_COLLECTION,
  storedDoc,
  type RunCountDoc,
  type RunDoc,
  type RunPageDoc,
  type StoredDoc,
} from "../contracts/read-models.ts";
import { startFerret, startNats } from "../platform/local-servers.ts";
import { readModelClient } from "../platform/read-model-db.ts";
import { mongoReadModels } from "../services/api/index.ts";
import { appendToRunList } from "../services/forensics/index.ts";
import { apiFixture, auth } from "../test/support/api-app.ts";
import { quantile, recordMetrics, round } from "./support/results.ts";
import { benchRunDoc } from "./support/run-docs.ts";

const RUNS = Number(process.env.BENCH_RUNS ?? 10_000);
const SAMPLES = Number(process.env.BENCH_SAMPLES ?? 50);
const TARGET_MS = 100;

const [nats, ferret] = await Promise.all([startNats(), startFerret()]);
const mongo = readModelClient(ferret.url);
const db = mongo.db(`bench_runs_list_${process.pid}`);
let failed = false;
try {
  const fx = await apiFixture(nats.url, { readModels: mongoReadModels(db) });
  const tenantId = "acme";
  const t0 = performance.now();
  const runs: RunDoc[] = [];
  const pages = new Map<number, RunPageDoc>();
  let count: RunCountDoc | undefined;
  for (let n = 0; n < RUNS; n++) {
    const seq = n + 1;
    const at = new Date(Date.UTC(2026, 0, 1) + n * 1000).toISOString();
    const sharedRunId = `run-bench-${String(n).padStart(6, "0")}`;
    runs.push(benchRunDoc(n, tenantId, { status: "submitted", stepCount: 3, spacingMs: 1000 }));
    const next = appendToRunList(count, (p) => pages.get(p), tenantId, { sharedRunId, seq, at });
    if (!next) throw new Error(`the run list refused submission ${seq}`);
    count = next.count;
    pages.set(next.page.page, next.page);
  }
  for (let i = 0; i < runs.length; i += 1000)
    await db.collection<StoredDoc>("runs").insertMany(runs.slice(i, i + 1000).map(storedDoc));
  await db.collection("runs").createIndex({ key: 1 }); // what the API reads a run by (ensureIndexes)
  await db.collection<RunPageDoc>("run_pages").insertMany([...pages.values()]);
  await db.collection<RunCountDoc>("run_counts").insertOne(count!);
  await db.collection<{ _id: string; seq: number }>(CHECKPOINT_COLLECTION).insertOne({ _id: "forensics", seq: RUNS });
  console.log(`${RUNS} runs written to the read models in ${round(performance.now() - t0, 0)} ms`);

  await fx.app.listen({ host: "127.0.0.1", port: 0 });
  const address = fx.app.server.address();
  const base = `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}`;
  const list = async (query: string) => {
    const res = await fetch(`${base}/v1/runs?${query}`, { headers: auth("acme") });
    if (res.status !== 200) throw new Error(`GET /v1/runs?${query}: ${res.status} ${await res.text()}`);
    return (await res.json()) as { runs: { sharedRunId: string }[]; next?: string };
  };
  // A cursor is the ordinal bound of the next page (`next` of the page before): 200 is RUNS − 200 runs deep.
  const cursor = "200";
  const seen = RUNS - 200;
  const first = await list("limit=20");
  if (first.next !== String(RUNS - 20)) throw new Error(`the first page's next is ${first.next}, not ${RUNS - 20}`);
  if (first.runs[0]?.sharedRunId !== `run-bench-${String(RUNS - 1).padStart(6, "0")}`)
    throw new Error(`the first page does not start with the newest run: ${first.runs[0]?.sharedRunId}`);
  const deep = await list(`limit=20&cursor=${cursor}`);
  if (deep.runs.length !== 20) throw new Error(`the deep page has ${deep.runs.length} runs`);

  const measure = async (name: string, query: string) => {
    const ms: number[] = [];
    for (let i = 0; i < SAMPLES; i++) {
      const s = performance.now();
      await list(query);
      ms.push(performance.now() - s);
    }
    const p50 = round(quantile(ms, 0.5), 1);
    const p99 = round(quantile(ms, 0.99), 1);
    console.log(`${name}: p50 ${p50} ms, p99 ${p99} ms (${SAMPLES} requests)`);
    return { p50, p99 };
  };
  const firstMs = await measure("runs_list_first_page", "limit=20");
  const deepMs = await measure("runs_list_deep_page", `limit=20&cursor=${cursor}`);
  const filteredMs = await measure("runs_list_filtered_page", "limit=20&status=submitted");
  const note = `${RUNS} runs of one tenant, limit 20, over HTTP, FerretDB (SQLite)`;
  await recordMetrics({
    runs_list_first_page: { unit: "ms", value: firstMs.p50, ...firstMs, note },
    runs_list_deep_page: { unit: "ms", value: deepMs.p50, ...deepMs, note: `${note}, ${seen} runs deep` },
    runs_list_filtered_page: { unit: "ms", value: filteredMs.p50, ...filteredMs, note: `${note}, status filter` },
  });
  for (const [name, m] of [
    ["first page", firstMs],
    ["deep page", deepMs],
  ] as const)
    if (m.p50 >= TARGET_MS) {
      console.log(`FAIL: the ${name} p50 ${m.p50} ms is not under ${TARGET_MS} ms`);
      failed = true;
    }
  await fx.close();
} finally {
  await db.dropDatabase().catch(() => undefined);
  await mongo.close();
  await Promise.all([nats.stop(), ferret.stop()]);
}
if (failed) process.exit(1);
