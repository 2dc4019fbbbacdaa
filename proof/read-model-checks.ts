import type { NatsConnection } from "@nats-io/transport-node";
import { CHECKPOINT_COLLECTION } from "../contracts/read-models.ts";
import { markerId, PROJECTION_NAME } from "../services/forensics/index.ts";
import { controlSubject } from "../platform/read-model-db.ts";
import type { StreamLayout } from "../streams/index.ts";
import { apiClient } from "../platform/api-client.ts";
import type { AssertionResult } from "./assertions.ts";
import { firstDifference } from "./first-difference.ts";
import { mapAtMost } from "../platform/map-at-most.ts";

const PAGE = 5000;
const SNAPSHOT_PARALLEL = 4;

interface Tenant {
  readonly tenantId: string;
  readonly token: string;
  readonly runs: readonly string[];
  /** Forensics records expected (impacted tenants; proof/send-failed.ts `recordsExpected`). */
  readonly records?: number;
}

/**
 * Assertions over the forensics read models, through the API with each tenant's own token
 * (proof-and-bench.md 5 and 6): safe tenants have zero recovery ledger entries; each impacted tenant
 * sees exactly its recovery records (three, or fewer where a send to the killed runtime failed); no tenant can read another's forensics or timeline; and
 * the read models — dropped mid-proof and rebuilt by the projector — equal a fresh rebuild from
 * sequence 1.
 */
export async function readModelAssertions(o: {
  apiUrl: string;
  nc: NatsConnection;
  layout: StreamLayout;
  controlPlaneId: string;
  impacted: readonly Tenant[];
  safe: readonly Tenant[];
  endSeq: number;
  timeoutMs: number;
}): Promise<AssertionResult[]> {
  const all = [...o.impacted, ...o.safe];
  const deadline = Date.now() + o.timeoutMs;
  // Where this phase's time goes (printed with the rebuild assertion): catching up, checks, snapshots, rebuilds.
  const spent = { catchUp: 0, checks: 0, queries: 0, rebuild: 0 };
  const timed = async <T>(k: keyof typeof spent, f: () => Promise<T>): Promise<T> => {
    const t = Date.now();
    try {
      return await f();
    } finally {
      spent[k] += Date.now() - t;
    }
  };
  const tCatchUp = Date.now();
  // The projector must have folded everything the proof read from the stream.
  for (;;) {
    const r = await apiClient(o.apiUrl, all[0]!.token).get("/v1/ledger?limit=1");
    if (r.status === 200 && r.body.asOf >= o.endSeq) break;
    if (Date.now() > deadline)
      return [
        {
          name: "read models: caught up with the stream",
          ok: false,
          violations: 1,
          detail: `asOf ${r.body?.asOf} < ${o.endSeq} (${r.status})`,
        },
      ];
    await new Promise((res) => setTimeout(res, 250));
  }
  spent.catchUp = Date.now() - tCatchUp;
  let snapshots = 0;
  const snapshot = async () => {
    snapshots++;
    const out: Record<string, unknown> = {};
    // A few tenants at a time: each query waits on FerretDB's scan, and one at a time left a core idle.
    // The keys are set in tenant order whatever order the answers come in, so equal read models give equal JSON.
    for (const t of all) out[t.tenantId] = undefined;
    await mapAtMost(all, SNAPSHOT_PARALLEL, async (t) => {
      const api = apiClient(o.apiUrl, t.token);
      const ledger: unknown[] = [];
      // A short page is the last one: asking again would cost another scan of the ledger on FerretDB.
      for (let since = 0; ;) {
        const page = (await api.get(`/v1/ledger?since=${since}&limit=${PAGE}`)).body;
        ledger.push(...page.entries);
        if (page.entries.length < PAGE) break;
        since = page.next;
      }
      out[t.tenantId] = { ledger, forensics: (await api.get("/v1/forensics?limit=5000")).body.entries };
    });
    return out;
  };
  const leaks: string[] = [],
    missing: string[] = [],
    cross: string[] = [];
  // Independent queries, a few at a time like the snapshot (one at a time left a core idle: ~3 s at P=20).
  await timed("checks", () =>
    mapAtMost(o.safe, SNAPSHOT_PARALLEL, async (t) => {
      const n = (await apiClient(o.apiUrl, t.token).get("/v1/ledger?recovery=true&limit=5000")).body.entries.length;
      if (n > 0) leaks.push(`${t.tenantId}: ${n} recovery ledger entries`);
    }),
  );
  await timed("checks", () =>
    mapAtMost([...o.impacted.entries()], SNAPSHOT_PARALLEL, async ([i, t]) => {
      const api = apiClient(o.apiUrl, t.token);
      const records = new Set(
        ((await api.get("/v1/forensics?limit=5000")).body.entries as { forensicsId: string }[]).map(
          (e) => e.forensicsId,
        ),
      );
      if (records.size !== (t.records ?? 3))
        missing.push(`${t.tenantId}: ${records.size} forensics records, expected ${t.records ?? 3}`);
      const other = o.impacted[(i + 1) % o.impacted.length]!;
      if (other.tenantId === t.tenantId) return;
      const foreign = (await api.get(`/v1/forensics?runId=${other.runs[0]}`)).body.entries.length;
      const timeline = (await api.get(`/v1/runs/${other.runs[0]}/timeline`)).status;
      if (foreign > 0 || timeline !== 404)
        cross.push(`${t.tenantId} read ${other.tenantId}: ${foreign} forensics rows, timeline ${timeline}`);
    }),
  );
  // Reported in tenant order whatever order the answers came in.
  for (const xs of [leaks, missing, cross]) xs.sort();
  // Compare at one stream position: events may still arrive after the runs complete (e.g. a late
  // suspicion), so a snapshot taken while asOf moved is retaken.
  const asOf = async () => (await apiClient(o.apiUrl, all[0]!.token).get("/v1/ledger?limit=1")).body.asOf as number;
  const stable = async (): Promise<{ at: number; body: string }> => {
    for (;;) {
      const at = await asOf();
      const body = JSON.stringify(await timed("queries", snapshot));
      if ((await asOf()) === at) return { at, body };
    }
  };
  let rebuilt = false,
    before = "",
    after = "",
    position = 0,
    difference: string | undefined;
  // Retried only when the stream moved between the snapshots; a difference at one position fails at once.
  for (let attempt = 0; attempt < 5 && before === ""; attempt++) {
    const b = await stable();
    await timed("rebuild", async () => {
      const reply = await o.nc.request(controlSubject(o.layout, o.controlPlaneId, "forensics", "rebuild"), "", {
        timeout: o.timeoutMs,
      });
      rebuilt = (reply.json() as { ok?: boolean }).ok === true;
      while ((await asOf()) < b.at) await new Promise((res) => setTimeout(res, 250));
    });
    const a = await stable();
    if (a.at !== b.at) continue; // the stream moved between the snapshots: compare again
    before = b.body;
    after = a.body;
    position = a.at;
    difference = firstDifference(JSON.parse(before), JSON.parse(after));
  }
  return [
    {
      name: "safe_leaks (read models): safe tenants have zero recovery ledger entries",
      ok: leaks.length === 0,
      violations: leaks.length,
      detail: leaks.join("; ") || `${o.safe.length} safe tenants, 0 entries`,
    },
    {
      name: "forensics (read models): each impacted tenant sees exactly its records (3, or fewer by a failed send), and nobody else's",
      ok: missing.length + cross.length === 0,
      violations: missing.length + cross.length,
      detail: [...missing, ...cross].join("; ") || `${o.impacted.length} tenants, 0 cross-tenant reads`,
    },
    {
      name: "rebuild: read models dropped mid-proof equal a fresh rebuild from sequence 1",
      ok: rebuilt && before === after,
      violations: rebuilt && before === after ? 0 : 1,
      detail: rebuilt
        ? before === after
          ? `${before.length} bytes of query results identical at stream position ${position} (catch-up ${spent.catchUp} ms, checks ${spent.checks} ms, snapshot queries ${spent.queries} ms in ${snapshots} snapshots, rebuild ${spent.rebuild} ms)`
          : `query results differ after the rebuild (position ${position}): dropped-and-rebuilt vs fresh ${difference ?? "(key order only)"}`
        : "rebuild request failed",
    },
  ];
}

/**
 * Drops every read model, then waits until the projector has noticed and rebuilt them (its "built"
 * marker is back): returns how long that took, so a drop that changed nothing cannot pass unnoticed.
 */
export async function dropReadModels(mongoUrl: string, db: string): Promise<number> {
  const { MongoClient } = await import("mongodb");
  const client = new MongoClient(mongoUrl, { serverSelectionTimeoutMS: 10_000 });
  try {
    const t0 = Date.now();
    await client.db(db).dropDatabase();
    const marker = { _id: markerId(PROJECTION_NAME) } as never;
    if (await client.db(db).collection(CHECKPOINT_COLLECTION).findOne(marker))
      throw new Error("the read models survived dropDatabase");
    while (Date.now() - t0 < 300_000) {
      if (await client.db(db).collection(CHECKPOINT_COLLECTION).findOne(marker)) return Date.now() - t0;
      await new Promise((r) => setTimeout(r, 250));
    }
    throw new Error("the forensics projector did not rebuild the dropped read models within 300 s");
  } finally {
    await client.close();
  }
}
