import type { Db, Filter } from "mongodb";
import { ledgerAfter, runRows } from "./ledger-reads.ts";
import { DroverError } from "../../../contracts/index.ts";
import {
  CHECKPOINT_COLLECTION,
  docOf,
  executionDocId,
  newestDoc,
  refuseOlderDoc,
  runDocId,
  type ExecutionDoc,
  type ForensicsRow,
  type IncidentDoc,
  type IncidentItem,
  type LedgerCountDoc,
  type LedgerPageDoc,
  type LedgerRow,
  type StoredDoc,
  type StoredLedgerChunk,
  runPageId,
  type RunCountDoc,
  type RunDoc,
  type RunPageDoc,
} from "../../../contracts/read-models.ts";

/** Ledger query: entries after `since` (exclusive), optionally only recovery (or only non-recovery) ones. */
export interface LedgerQuery {
  readonly since: number;
  readonly recovery?: boolean;
  readonly limit: number;
}
/** Forensics query: by run, by incident, or both (rows of that run in that incident). */
export interface ForensicsQuery {
  readonly sharedRunId?: string;
  readonly incidentId?: string;
  readonly limit: number;
}

/**
 * The forensics read models as the API reads them. Every method that returns tenant rows takes
 * the tenant and filters on it in the query itself, so no caller can forget the boundary;
 * `incident` is the one unscoped read (its callers scope it: see domain/forensics-view.ts), and
 * `incidentItems` is unscoped only when asked for every tenant (operators).
 * Failure mode: MongoDB not answering rejects with `read-model-unavailable` (503, retryable).
 */
export interface ReadModels {
  run(tenantId: string, sharedRunId: string): Promise<RunDoc | undefined>;
  executions(tenantId: string, executionIds: readonly string[]): Promise<ExecutionDoc[]>;
  /** The run's ledger rows and those of its executions, in stream order. */
  runLedger(tenantId: string, sharedRunId: string, executionIds: readonly string[]): Promise<LedgerRow[]>;
  ledger(tenantId: string, q: LedgerQuery): Promise<LedgerRow[]>;
  forensics(tenantId: string, q: ForensicsQuery): Promise<ForensicsRow[]>;
  /** Every tenant's forensics rows of one incident: operators only. */
  incidentForensics(incidentId: string): Promise<ForensicsRow[]>;
  incident(incidentId: string): Promise<IncidentDoc | undefined>;
  /** The latest incidents, newest first: operators only (a scan of `incidents`, which holds one document per runtime failure). */
  recentIncidents(limit: number): Promise<IncidentDoc[]>;
  /** The incident's items: one tenant's, or (operators, `tenantId` undefined) every tenant's. */
  incidentItems(incidentId: string, tenantId: string | undefined): Promise<IncidentItem[]>;
  /** How many runs the tenant submitted (the run list's length). */
  runCount(tenantId: string): Promise<number>;
  /** The tenant's run-list pages with these numbers (missing ones left out). */
  runPages(tenantId: string, pages: readonly number[]): Promise<RunPageDoc[]>;
  /** The tenant's runs with these ids, each found by `_id` (missing ones left out). */
  runsById(tenantId: string, sharedRunIds: readonly string[]): Promise<RunDoc[]>;
  /** The stream sequence the projector has applied up to: how current the answers are. */
  position(): Promise<number>;
}

const unavailable = (e: unknown) =>
  new DroverError("read-model-unavailable", `the forensics read models did not answer: ${(e as Error).message}`, {
    cause: e,
  });

// Driver errors (server selection, network, timeouts) all mean the same to a caller: try later.
async function guarded<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (e) {
    throw (e as Error).name?.startsWith("Mongo") ? unavailable(e) : e;
  }
}

/**
 * The document if it is the tenant's, else undefined. Lookups filter on `_id` alone (its key starts
 * with the tenant) and check the tenant here: FerretDB v1 pushes only `{_id: <string>}` down (to its
 * `_id` index, with the patch in scripts/patches/) and scans the whole collection for `{_id, tenantId}`.
 */
function mine<T extends { readonly tenantId?: string }>(tenantId: string, doc: T | null): T | undefined {
  return doc !== null && doc.tenantId === tenantId ? doc : undefined;
}

/** {@link ReadModels} over the projector's database (the same name the `forensics` service writes). */
export function mongoReadModels(db: Db): ReadModels {
  // Stored encoded as versions (StoredDoc): the newest version of the key, its tenant checked on the
  // stored fields, then decoded. One `{key}` query (its index) per document: O(its versions).
  const runs = db.collection<StoredDoc>("runs");
  const executions = db.collection<StoredDoc>("executions");
  const newest = async (c: typeof runs, key: string): Promise<StoredDoc | null> => {
    const found = newestDoc(await c.find({ key }).toArray());
    // No version: a document stored by an older shape (by `_id`, no `key`) is 503, not "not found".
    if (!found) refuseOlderDoc(await c.findOne({ _id: key }));
    return found ?? null;
  };
  const decoded = <T extends RunDoc | ExecutionDoc>(tenantId: string, s: StoredDoc | null): T | undefined => {
    const doc = mine(tenantId, s);
    return doc && docOf<T>(doc);
  };
  const ledger = db.collection<StoredLedgerChunk>("ledger");
  const ledgerCounts = db.collection<LedgerCountDoc>("ledger_counts");
  const ledgerPages = db.collection<LedgerPageDoc>("ledger_pages");
  const forensics = db.collection<ForensicsRow>("forensics");
  const incidents = db.collection<IncidentDoc>("incidents");
  const items = db.collection<IncidentItem>("incident_items");
  const runCounts = db.collection<RunCountDoc>("run_counts");
  const runPages = db.collection<RunPageDoc>("run_pages");
  const bySeq = { seq: 1 } as const;
  return {
    // By `_id` (which starts with the tenant): FerretDB finds those through its `_id` index.
    run: (tenantId, sharedRunId) =>
      guarded(async () => decoded<RunDoc>(tenantId, await newest(runs, runDocId(tenantId, sharedRunId)))),
    executions: (tenantId, ids) =>
      guarded(async () => {
        const docs = await Promise.all(
          ids.map(async (id) =>
            decoded<ExecutionDoc>(tenantId, await newest(executions, executionDocId(tenantId, id))),
          ),
        );
        return docs.filter((d) => d !== undefined).sort((a, b) => a.firstSeq - b.firstSeq);
      }),
    // By `runKey` and by `page` (services/api/shell/ledger-reads.ts): never the tenant's whole ledger.
    runLedger: (tenantId, sharedRunId, ids) => guarded(() => runRows(ledger, tenantId, sharedRunId, ids)),
    ledger: (tenantId, q) =>
      guarded(() => ledgerAfter({ ledger, counts: ledgerCounts, pages: ledgerPages }, tenantId, q)),
    forensics: (tenantId, q) =>
      guarded(() => {
        const filter: Filter<ForensicsRow> = {
          tenantId,
          ...(q.sharedRunId ? { sharedRunId: q.sharedRunId } : {}),
          ...(q.incidentId ? { incidentId: q.incidentId } : {}),
        };
        return forensics.find(filter).sort(bySeq).limit(q.limit).toArray();
      }),
    incidentForensics: (incidentId) => guarded(() => forensics.find({ incidentId }).sort(bySeq).toArray()),
    incident: (incidentId) => guarded(async () => (await incidents.findOne({ _id: incidentId })) ?? undefined),
    recentIncidents: (limit) => guarded(() => incidents.find({}).sort({ firstSeq: -1 }).limit(limit).toArray()),
    incidentItems: (incidentId, tenantId) =>
      guarded(() =>
        items
          .find({ incidentId, ...(tenantId === undefined ? {} : { tenantId }) })
          .sort({ _id: 1 })
          .toArray(),
      ),
    runCount: (tenantId) => guarded(async () => mine(tenantId, await runCounts.findOne({ _id: tenantId }))?.count ?? 0),
    runPages: (tenantId, pages) =>
      guarded(async () => {
        const docs = await Promise.all(
          pages.map(async (n) => mine(tenantId, await runPages.findOne({ _id: runPageId(tenantId, n) }))),
        );
        return docs.filter((d) => d !== undefined);
      }),
    runsById: (tenantId, ids) =>
      guarded(async () => {
        const docs = await Promise.all(
          ids.map(async (id) => decoded<RunDoc>(tenantId, await newest(runs, runDocId(tenantId, id)))),
        );
        return docs.filter((d) => d !== undefined);
      }),
    position: () =>
      guarded(
        async () =>
          (await db.collection<{ _id: string; seq: number }>(CHECKPOINT_COLLECTION).findOne({ _id: "forensics" }))
            ?.seq ?? 0,
      ),
  };
}
