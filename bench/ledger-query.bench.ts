/**
 * The ledger (`GET /v1/ledger`) of one tenant with ROWS ledger rows in the collection, against a
 * private nats-server and FerretDB (run with tsx: `make bench`). Half the rows are the measured
 * tenant's (1 in 100 of them a recovery entry), the other half are spread over 50 other tenants
 * (`globex` among them, 1% of the rows), interleaved in stream order as a shared stream interleaves
 * them. The read models are written directly: the rows, and the heads and pages through the
 * projector's own pure `appendToLedgerPages` (bench/support/ledger-pages.ts): this measures reading,
 * not projecting (bench/projector.bench.ts measures that). Then, over real HTTP through the API,
 * p50/p99 of SAMPLES requests each:
 *
 *  - read_model_query_ms: the tenant's ledger from the start (`since=0`, limit 500);
 *  - ledger_deep_page: 500 entries from the middle of the tenant's ledger (`since` = a sequence halfway);
 *  - ledger_recovery_page: the tenant's recovery entries (`recovery=true`, limit 500);
 *  - ledger_small_tenant: globex's ledger (1% of the rows), from the start;
 *  - ledger_limit_50: the first case with limit 50;
 *  - ledger_run_timeline: one run's rows (its run's pages), in-process.
 */
import type { LedgerRow } from "../contracts/read-models.ts";
import { startFerret, startNats } from "../platform/local-servers.ts";
import { readModelClient } from "../platform/read-model-db.ts";
import { mongoReadModels } from "../services/api/index.ts";
import { ensureIndexes, readModelDb } from "../services/forensics/index.ts";
import { apiFixture, auth } from "../test/support/api-app.ts";
import { quantile, recordMetrics, round } from "./support/results.ts";
import { writeLedgerPages } from "./support/ledger-pages.ts";

const ROWS = Number(process.env.BENCH_ROWS ?? 100_000);
const SAMPLES = Number(process.env.BENCH_SAMPLES ?? 30);
const LIMIT = 500;

const [nats, ferret] = await Promise.all([startNats(), startFerret()]);
const mongo = readModelClient(ferret.url);
const db = mongo.db(`bench_ledger_${process.pid}`);
try {
  const m = readModelDb(db);
  await ensureIndexes(m);
  const fx = await apiFixture(nats.url, { readModels: mongoReadModels(db) });
  const t0 = performance.now();
  const rows: LedgerRow[] = [];
  for (let n = 0; n < ROWS; n++) {
    const seq = n + 1;
    const tenantId = n % 2 === 0 ? "acme" : n % 100 === 1 ? "globex" : `other-${String(n % 100).padStart(2, "0")}`;
    const at = new Date(Date.UTC(2026, 0, 1) + n * 10).toISOString();
    const recovery = n % 200 === 0;
    rows.push({
      _id: `DROVER:${seq}:${tenantId}`,
      tenantId,
      stream: "DROVER",
      seq,
      at,
      storedAt: at,
      type: recovery ? "exec.paused-for-recovery" : "exec.step-completed",
      aggregateId: `exec-${tenantId}-${Math.floor(n / 20)}`,
      recovery,
      // Like exec events, only an execution's first row names its run.
      ...(n % 20 < 2 ? { sharedRunId: `run-${tenantId}-${Math.floor(n / 20)}` } : {}),
      executionId: `exec-${tenantId}-${Math.floor(n / 20)}`,
      summary: recovery ? "execution paused for recovery" : `step s${n % 10} completed (attempt 1)`,
      detail: { stepId: `s${n % 10}`, attempt: 1, durationMs: 3, outputDigest: "sha256:" + "ab".repeat(32) },
    });
  }
  for (let i = 0; i < rows.length; i += 1000) await m.ledger.insertMany(rows.slice(i, i + 1000));
  await writeLedgerPages(m, rows, (executionId) => executionId.replace(/^exec-/, "run-"));
  await m.checkpoints.insertOne({ _id: "forensics", seq: ROWS });
  console.log(`${ROWS} ledger rows written to the read models in ${round(performance.now() - t0, 0)} ms`);

  await fx.app.listen({ host: "127.0.0.1", port: 0 });
  const address = fx.app.server.address();
  const base = `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}`;
  const get = async (tenant: "acme" | "globex", query: string) => {
    const res = await fetch(`${base}/v1/ledger?${query}`, { headers: auth(tenant) });
    if (res.status !== 200) throw new Error(`GET /v1/ledger?${query}: ${res.status} ${await res.text()}`);
    return (await res.json()) as { entries: { seq: number; recovery: boolean }[]; next: number };
  };
  const mid = ROWS / 2;
  // What each answer must be, from the rows themselves: the bench measures correct answers only.
  const expected = (tenant: string, since: number, recovery?: boolean, limit = LIMIT) =>
    rows
      .filter((r) => r.tenantId === tenant && r.seq > since && (recovery === undefined || r.recovery === recovery))
      .slice(0, limit)
      .map((r) => r.seq);
  const cases = [
    ["read_model_query_ms", "acme", `limit=${LIMIT}`, expected("acme", 0)],
    ["ledger_deep_page", "acme", `since=${mid}&limit=${LIMIT}`, expected("acme", mid)],
    ["ledger_recovery_page", "acme", `recovery=true&limit=${LIMIT}`, expected("acme", 0, true)],
    ["ledger_small_tenant", "globex", `limit=${LIMIT}`, expected("globex", 0)],
    // O(answer): a tenth of the answer should cost about a tenth.
    ["ledger_limit_50", "acme", `limit=50`, expected("acme", 0, undefined, 50)],
  ] as const;
  const results: Record<string, { p50: number; p99: number }> = {};
  for (const [name, tenant, query, want] of cases) {
    const got = (await get(tenant, query)).entries.map((e) => e.seq);
    if (JSON.stringify(got) !== JSON.stringify(want))
      throw new Error(`${name}: ${got.length} entries (first ${got[0]}), expected ${want.length} (first ${want[0]})`);
    const ms: number[] = [];
    for (let i = 0; i < SAMPLES; i++) {
      const s = performance.now();
      await get(tenant, query);
      ms.push(performance.now() - s);
    }
    results[name] = { p50: round(quantile(ms, 0.5), 1), p99: round(quantile(ms, 0.99), 1) };
    console.log(
      `${name}: p50 ${results[name].p50} ms, p99 ${results[name].p99} ms (${want.length} entries, ${SAMPLES} requests)`,
    );
  }
  // The query the pages replaced, in-process, for comparison (printed, not recorded): `seq > since`,
  // the sort and the limit are not pushed down, so it reads and sorts every row of the tenant.
  for (const [name, tenant, query] of cases) {
    const p = new URLSearchParams(query);
    const since = Number(p.get("since") ?? 0);
    const recovery = p.get("recovery");
    const ms: number[] = [];
    for (let i = 0; i < 3; i++) {
      const s = performance.now();
      await m.ledger
        .find({
          tenantId: tenant,
          seq: { $gt: since },
          ...(recovery === null ? {} : { recovery: recovery === "true" }),
        })
        .sort({ seq: 1 })
        .limit(Number(p.get("limit")))
        .toArray();
      ms.push(performance.now() - s);
    }
    console.log(`${name} with the previous query (rows collection, in-process): p50 ${round(quantile(ms, 0.5), 1)} ms`);
  }
  // A run's timeline rows (`GET /v1/runs/:id/timeline` reads them), in-process: one run of 10 rows.
  const rm = mongoReadModels(db);
  const k = Math.floor(ROWS / 40);
  const [run, exec] = [`run-acme-${k}`, `exec-acme-${k}`];
  const wantRun = rows.filter((r) => r.tenantId === "acme" && (r.sharedRunId === run || r.executionId === exec));
  const timed = async (name: string, n: number, read: () => Promise<LedgerRow[]>) => {
    const ms: number[] = [];
    for (let i = 0; i < n; i++) {
      const s = performance.now();
      const got = await read();
      ms.push(performance.now() - s);
      if (JSON.stringify(got.map((r) => r._id)) !== JSON.stringify(wantRun.map((r) => r._id)))
        throw new Error(`${name}: ${got.length} rows, expected ${wantRun.length}`);
    }
    results[name] = { p50: round(quantile(ms, 0.5), 1), p99: round(quantile(ms, 0.99), 1) };
    console.log(
      `${name}: p50 ${results[name].p50} ms, p99 ${results[name].p99} ms (${wantRun.length} rows, ${n} reads)`,
    );
  };
  await timed("ledger_run_timeline", SAMPLES, () => rm.runLedger("acme", run, [exec]));
  // The query it replaced, for comparison (printed, not recorded): `$or` is not pushed down.
  await timed("ledger_run_timeline_with_or (previous query)", 3, () =>
    m.ledger
      .find({ tenantId: "acme", $or: [{ sharedRunId: run }, { executionId: { $in: [exec] } }] })
      .sort({ seq: 1 })
      .toArray(),
  );
  const note = `${ROWS} ledger rows in the collection (half one tenant's), FerretDB (SQLite), over HTTP but the run timeline`;
  await recordMetrics(
    Object.fromEntries(
      [...cases, ["ledger_run_timeline", "acme", `one run's rows (10), in-process`] as const].map(([name, , query]) => [
        name,
        { unit: "ms", value: results[name]!.p50, ...results[name], note: `${note}: ${query}` },
      ]),
    ),
  );
  await fx.close();
} finally {
  await db.dropDatabase().catch(() => undefined);
  await mongo.close();
  await Promise.all([nats.stop(), ferret.stop()]);
}
