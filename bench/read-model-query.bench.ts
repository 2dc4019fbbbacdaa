/**
 * Tenant-scoped read-model queries in a crowded collection (issue 15 item 5, `read_model_query_ms`),
 * against a private nats-server and FerretDB (run with tsx: `make bench`). The read models are
 * written directly: ROWS ledger rows and ROWS run documents over TENANTS tenants, interleaved in
 * stream order as a shared stream interleaves them, so the tenant measured ("acme") holds
 * ROWS / TENANTS of each (1 % by default). Then, over real HTTP through the API, SAMPLES requests each:
 *
 *  - ledger first page: `GET /v1/ledger?limit=100`;
 *  - ledger deep page: `GET /v1/ledger?since=<acme's row 9/10 in>&limit=100`;
 *  - runs list first page: `GET /v1/runs?limit=20`.
 * `read_model_query_ms` is p50/p99 over all three; each has its own key too.
 * The target (issue 15: O(result), not O(collection)) is checked against the same queries with the
 * collection holding only acme's rows: the process exits 1 when a crowded p50 is over 3× its alone p50 + 5 ms.
 */
import type { Db } from "mongodb";
import {
  CHECKPOINT_COLLECTION,
  storedDoc,
  storedLedgerChunk,
  type LedgerCountDoc,
  type LedgerPageDoc,
  type LedgerRow,
  type RunCountDoc,
  type RunDoc,
  type RunPageDoc,
  type StoredDoc,
  type StoredLedgerChunk,
} from "../contracts/read-models.ts";
import { startFerret, startNats } from "../platform/local-servers.ts";
import { readModelClient } from "../platform/read-model-db.ts";
import { mongoReadModels } from "../services/api/index.ts";
import { appendToRunList, ensureIndexes, placeLedgerRow, readModelDb } from "../services/forensics/index.ts";
import { apiFixture, auth } from "../test/support/api-app.ts";
import { quantile, recordMetrics, round } from "./support/results.ts";
import { benchRunDoc } from "./support/run-docs.ts";

const ROWS = Number(process.env.BENCH_ROWS ?? 100_000);
const TENANTS = Number(process.env.BENCH_TENANTS ?? 100);
const SAMPLES = Number(process.env.BENCH_SAMPLES ?? 50);
const ME = "acme";

/** Tenant of the n-th row (0-based): acme every TENANTS-th row, others in between. */
const tenantOf = (n: number) => (n % TENANTS === 0 ? ME : `tenant-${n % TENANTS}`);

/** The n-th row as the projector places it after `count` (the tenant's lanes so far). */
function ledgerRow(n: number, tenantId: string, count: LedgerCountDoc | undefined) {
  const seq = n + 1;
  const at = new Date(Date.UTC(2026, 0, 1) + n * 10).toISOString();
  const placed = placeLedgerRow(count, {
    _id: `DROVER:${seq}:${tenantId}`,
    tenantId,
    stream: "DROVER",
    seq,
    at,
    storedAt: at,
    type: "exec.step-completed",
    aggregateId: `exec-${Math.floor(n / 50)}`,
    recovery: false,
    sharedRunId: `run-${Math.floor(n / 500)}`,
    executionId: `exec-${Math.floor(n / 50)}`,
    summary: `step s${n % 50} completed`,
    detail: { stepId: `s${n % 50}`, attempt: 1, durationMs: 20 },
    runKey: `${tenantId}:r:run-${Math.floor(n / 500)}`,
  });
  if (!placed) throw new Error(`the ledger refused row ${n}`);
  return placed;
}

const runDoc = (n: number, tenantId: string): RunDoc =>
  benchRunDoc(n, tenantId, { status: "completed", stepCount: 10, spacingMs: 10 });

/** Writes ROWS ledger rows and run documents (only acme's when `alone`), with each tenant's run list. */
async function fill(db: Db, alone: boolean): Promise<{ mine: number; deepSince: number }> {
  await ensureIndexes(readModelDb(db));
  const counts = new Map<string, RunCountDoc>();
  const pages = new Map<string, RunPageDoc>();
  const ledgerCounts = new Map<string, LedgerCountDoc>();
  const ledgerPages: LedgerPageDoc[] = [];
  const mySeqs: number[] = [];
  for (let start = 0; start < ROWS; start += 2000) {
    const ledger: LedgerRow[] = [];
    const runs: RunDoc[] = [];
    for (let n = start; n < Math.min(ROWS, start + 2000); n++) {
      const tenantId = tenantOf(n);
      if (alone && tenantId !== ME) continue;
      if (tenantId === ME) mySeqs.push(n + 1);
      const placed = ledgerRow(n, tenantId, ledgerCounts.get(tenantId));
      ledger.push(placed.row);
      ledgerCounts.set(tenantId, placed.count);
      if (placed.pageStart) ledgerPages.push(placed.pageStart);
      const run = runDoc(n, tenantId);
      runs.push(run);
      const next = appendToRunList(counts.get(tenantId), (p) => pages.get(`${tenantId}:${p}`), tenantId, {
        sharedRunId: run.sharedRunId,
        seq: n + 1,
        at: run.submitted!.at,
      });
      if (!next) throw new Error(`the run list refused run ${n}`);
      counts.set(tenantId, next.count);
      pages.set(`${tenantId}:${next.page.page}`, next.page);
    }
    await db.collection<StoredLedgerChunk>("ledger").insertMany(ledger.map((r) => storedLedgerChunk([r])));
    await db.collection<StoredDoc>("runs").insertMany(runs.map(storedDoc));
  }
  await db.collection<RunPageDoc>("run_pages").insertMany([...pages.values()]);
  await db.collection<RunCountDoc>("run_counts").insertMany([...counts.values()]);
  await db.collection<LedgerPageDoc>("ledger_pages").insertMany(ledgerPages);
  await db.collection<LedgerCountDoc>("ledger_counts").insertMany([...ledgerCounts.values()]);
  await db.collection<{ _id: string; seq: number }>(CHECKPOINT_COLLECTION).insertOne({ _id: "forensics", seq: ROWS });
  return { mine: mySeqs.length, deepSince: mySeqs[Math.floor(mySeqs.length * 0.9) - 1]! };
}

type Timed = Record<"ledger_first_page" | "ledger_deep_page" | "runs_list_first_page", number[]>;

async function measure(natsUrl: string, db: Db, alone: boolean): Promise<Timed> {
  const t0 = performance.now();
  const { mine, deepSince } = await fill(db, alone);
  const total = alone ? mine : ROWS;
  console.log(
    `${total} ledger rows and ${total} runs written (${mine} of them acme's) in ${round(performance.now() - t0, 0)} ms`,
  );
  const fx = await apiFixture(natsUrl, { readModels: mongoReadModels(db) });
  try {
    await fx.app.listen({ host: "127.0.0.1", port: 0 });
    const address = fx.app.server.address();
    const base = `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}`;
    const get = async (path: string, expect: number) => {
      const res = await fetch(`${base}${path}`, { headers: auth(ME) });
      if (res.status !== 200) throw new Error(`GET ${path}: ${res.status} ${await res.text()}`);
      const body = (await res.json()) as { entries?: { seq: number }[]; runs?: unknown[] };
      const n = (body.entries ?? body.runs ?? []).length;
      if (n !== expect) throw new Error(`GET ${path}: ${n} rows, expected ${expect}`);
    };
    const queries: [keyof Timed, string, number][] = [
      ["ledger_first_page", "/v1/ledger?limit=100", 100],
      ["ledger_deep_page", `/v1/ledger?since=${deepSince}&limit=100`, 100],
      ["runs_list_first_page", "/v1/runs?limit=20", 20],
    ];
    const out: Timed = { ledger_first_page: [], ledger_deep_page: [], runs_list_first_page: [] };
    for (const [, path, n] of queries) await get(path, n); // warm-up
    for (let i = 0; i < SAMPLES; i++)
      for (const [name, path, n] of queries) {
        const s = performance.now();
        await get(path, n);
        out[name].push(performance.now() - s);
      }
    return out;
  } finally {
    await fx.close();
  }
}

const [nats, ferret] = await Promise.all([startNats(), startFerret()]);
const mongo = readModelClient(ferret.url);
const crowdedDb = mongo.db(`bench_rm_query_${process.pid}`);
const aloneDb = mongo.db(`bench_rm_query_alone_${process.pid}`);
let failed = false;
try {
  const alone = await measure(nats.url, aloneDb, true);
  const crowded = await measure(nats.url, crowdedDb, false);
  const p = (xs: number[]) => ({ p50: round(quantile(xs, 0.5), 1), p99: round(quantile(xs, 0.99), 1) });
  const note = `acme's ${ROWS / TENANTS} of ${ROWS} rows (ledger) and runs, ${TENANTS} tenants, over HTTP, FerretDB (SQLite)`;
  const metrics: Parameters<typeof recordMetrics>[0] = {};
  for (const name of Object.keys(crowded) as (keyof Timed)[]) {
    const c = p(crowded[name]);
    const a = p(alone[name]);
    console.log(
      `${name}: p50 ${c.p50} ms, p99 ${c.p99} ms (${ROWS} rows); alone (${ROWS / TENANTS} rows): p50 ${a.p50} ms, p99 ${a.p99} ms`,
    );
    metrics[`read_model_query_ms_${name}`] = {
      unit: "ms",
      value: c.p50,
      ...c,
      note: `${note}; acme alone: p50 ${a.p50}, p99 ${a.p99}`,
    };
    if (c.p50 > 3 * a.p50 + 5) {
      console.log(`FAIL: ${name} costs O(collection): p50 ${c.p50} ms crowded vs ${a.p50} ms alone`);
      failed = true;
    }
  }
  const all = p(Object.values(crowded).flat());
  metrics.read_model_query_ms = {
    unit: "ms",
    value: all.p50,
    ...all,
    note: `ledger first and deep page, runs list first page; ${note}`,
  };
  console.log(`read_model_query_ms: p50 ${all.p50} ms, p99 ${all.p99} ms`);
  await recordMetrics(metrics);
} finally {
  await crowdedDb.dropDatabase().catch(() => undefined);
  await aloneDb.dropDatabase().catch(() => undefined);
  await mongo.close();
  await Promise.all([nats.stop(), ferret.stop()]);
}
if (failed) process.exit(1);
