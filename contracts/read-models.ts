/**
 * The forensics read models in MongoDB (recovery.md "Forensics and ledger"): written only by the
 * `forensics` projector from the DROVER stream, read by the API. Everything here can be rebuilt by
 * replay from sequence 1, so a document never holds a fact the stream does not.
 *
 * Shapes respect FerretDB v1: no arrays of arrays, and no key built from data (step ids, label
 * keys) — a key may not contain `.` or start with `$`, so such values are stored as array rows.
 * Step outputs and DAG params are never copied (they may hold nested arrays); digests are.
 * FerretDB v1 (SQLite) finds by `_id` in constant time, and (our patches) top-level equality through
 * an index on that field, but applies every operator, sort and limit in Go, so: rows keyed by sequence
 * are inserted once and never updated (ledger, forensics); documents that change (runs, executions,
 * incidents, items, runtimes) are one per aggregate and stay small; the API's ledger and run-list
 * queries read by `_id` or by an equality key that holds at most a page (ledger `page`, `runKey`),
 * never the tenant's whole ledger nor the collection (services/forensics/README.md). Nothing is
 * kept that no query reads: every document costs FerretDB more than the event cost the runtime.
 */

/** The collections the projector owns; a rebuild drops and refills exactly these. */
export const READ_MODEL_COLLECTIONS = [
  "runs",
  "executions",
  "incidents",
  "incident_items",
  "forensics",
  "ledger",
  "runtimes",
  "run_counts",
  "run_pages",
  "ledger_counts",
  "ledger_pages",
] as const;
export type ReadModelCollection = (typeof READ_MODEL_COLLECTIONS)[number];
/**
 * Collections earlier versions kept and a rebuild drops too: `steps` (each step's first completion,
 * never read: the API counts steps from the ledger; half of FerretDB's inserts in W2).
 */
export const RETIRED_READ_MODEL_COLLECTIONS = ["steps"] as const;
/** Where the projector keeps its checkpoint document (`{ _id: <projection>, seq }`). */
export const CHECKPOINT_COLLECTION = "checkpoints";

export type Scalar = string | number | boolean | null;
/** Event facts worth showing, flattened: scalars, or a list of flat rows (never a list of lists). */
export type Detail = Readonly<Record<string, Scalar | readonly Readonly<Record<string, Scalar>>[]>>;

/** Where an event sits in the one total order, and when it happened. */
export interface Position {
  readonly seq: number;
  /** Writer's clock (envelope `occurredAt`), for humans. */
  readonly at: string;
  /** JetStream's receive time of the message. */
  readonly storedAt: string;
}

/** The ids an event names, copied to rows so rows can be found by any of them. */
export interface Refs {
  readonly sharedRunId?: string;
  readonly executionId?: string;
  readonly localRunId?: string;
  readonly runtimeInstanceId?: string;
  readonly incidentId?: string;
  readonly forensicsId?: string;
}

/**
 * The shape of the read models this code writes and reads: the build marker names it, so a
 * database built by code of another shape holds no complete build and is rebuilt from sequence 1
 * (2: ledger rows are placed in lanes and pages, `ledger_counts`, `ledger_pages`, `runKey`;
 * 3: a ledger row is stored as one document, its unqueried fields in one JSON string, its unqueried fields in one JSON string;
 * 4: run and execution documents are stored as {@link StoredDoc};
 * 5: ledger rows are stored in chunks, {@link StoredLedgerChunk};
 * 6: a run or execution document is stored as versions, each inserted once, {@link StoredDoc}).
 */
export const READ_MODEL_SHAPE = 6;

export * from "./read-model-storage.ts";

/**
 * Each tenant's ledger is two lanes, its recovery rows and the rest (`work`), each numbered 0, 1,
 * 2, … in stream order and cut in pages of LEDGER_PAGE_SIZE: a row's `page` is
 * {@link ledgerPageId}, and a page is one equality query (`{page}`, through its index) of at most
 * that many rows. FerretDB v1 (SQLite) pushes neither a range nor a sort or limit down, so a query
 * on `{tenantId, seq: {$gt}}` read and decoded every row of the tenant; a page of the ledger reads
 * the pages that hold it (services/forensics/README.md, "Ledger pages").
 */
export const LEDGER_PAGE_SIZE = 100;
export type LedgerLane = "recovery" | "work";
export const LEDGER_LANES: readonly LedgerLane[] = ["recovery", "work"];
export const ledgerLaneOf = (row: { readonly recovery: boolean }): LedgerLane => (row.recovery ? "recovery" : "work");
export const ledgerPageId = (tenantId: string, lane: LedgerLane, page: number): string => `${tenantId}:${lane}:${page}`;
/** How many rows of each lane: a lane's next ordinal. */
export type LaneCounts = Readonly<Record<LedgerLane, number>>;

/**
 * One event as it concerns one tenant (`ledger`). `_id` is `<stream>:<seq>:<tenantId>`: one event
 * can concern several tenants (a recovery plan names each impacted tenant), never twice the same.
 * `recovery` marks recovery entries (forensics timeline, requeues, pause and resume, recovery
 * plans): a tenant with no work on a failed runtime has none.
 */
export interface LedgerEntry extends Refs, Position {
  readonly _id: string;
  readonly tenantId: string;
  readonly stream: string;
  readonly type: string;
  readonly aggregateId: string;
  readonly recovery: boolean;
  readonly summary: string;
  readonly detail: Detail;
}

/**
 * A ledger entry as stored, with where it sits: `before` counts the tenant's rows of each lane
 * before it (so its ordinal is `before[its lane]`, and a page after it starts there), `page` is its
 * lane's page, and `runKey` finds a run's rows (`<tenant>:r:<sharedRunId>` when the row names a
 * run, else `<tenant>:e:<executionId>` when it names an execution). None of these is answered.
 */
export interface LedgerRow extends LedgerEntry {
  readonly before: LaneCounts;
  readonly page: string;
  readonly runKey?: string;
}

/** The tenant's ledger lanes so far (`ledger_counts`, `_id` = tenantId); `stream` names its rows' `_id`. */
export interface LedgerCountDoc extends LaneCounts {
  readonly _id: string;
  readonly tenantId: string;
  readonly stream: string;
  readonly lastSeq: number;
}

/** Where a ledger page starts (`ledger_pages`, `_id` {@link ledgerPageId}): inserted once, with the page's first row. */
export interface LedgerPageDoc {
  readonly _id: string;
  readonly tenantId: string;
  readonly firstSeq: number;
}

/** One event of a recovered item's forensics timeline; `_id` is `<stream>:<seq>`. */
export interface ForensicsRow extends Refs, Position {
  readonly _id: string;
  readonly tenantId: string;
  readonly stream: string;
  readonly type: string;
  readonly forensicsId: string;
  readonly incidentId: string;
  readonly sharedRunId: string;
  readonly class: string;
  readonly failedRuntimeInstanceId: string;
  readonly failedLocalRunId: string;
  readonly summary: string;
  readonly detail: Detail;
}

/** One placement of a run: admitted on a runtime under a LocalRunId, maybe dispatched, maybe failed. */
export interface PlacementRow {
  readonly localRunId: string;
  readonly runtimeInstanceId: string;
  readonly admittedSeq: number;
  readonly recovery: boolean;
  readonly candidates: number;
  readonly dispatchedSeq?: number;
  readonly transport?: string;
  readonly resumeExecutionId?: string;
  readonly dispatchFailedSeq?: number;
  readonly dispatchFailure?: string;
}

/** The `runs` key: tenant first, so two tenants' runs never share a document and a tenant's read names its own. */
export const runDocId = (tenantId: string, sharedRunId: string): string => `${tenantId}:${sharedRunId}`;
/** The `executions` key, tenant first like `runs`. */
export const executionDocId = (tenantId: string, executionId: string): string => `${tenantId}:${executionId}`;

/** A run (`runs`, `_id` {@link runDocId}), folded from its run events. */
export interface RunDoc {
  readonly _id: string;
  readonly tenantId: string;
  readonly sharedRunId: string;
  readonly status: string;
  readonly dagName?: string;
  readonly stepCount: number;
  readonly source?: string;
  readonly idempotencyKey?: string;
  readonly labels: readonly { readonly key: string; readonly value: string }[];
  readonly submitted?: Position;
  readonly placements: readonly PlacementRow[];
  readonly executionIds: readonly string[];
  readonly forensicsIds: readonly string[];
  readonly incidentIds: readonly string[];
  readonly scaleOutRequestIds: readonly string[];
  readonly lastReason?: { readonly code: string; readonly detail: string };
  readonly cancelRequested?: Position & { readonly by: string; readonly reason: string };
  /** The run this one reruns (`run.submitted` data.rerunOf). */
  readonly rerunOf?: string;
  /** Runs submitted as reruns of this one, in submission order (the other direction of `rerunOf`). */
  readonly rerunIds?: readonly string[];
  readonly ended?: Position & { readonly status: string };
  readonly firstSeq: number;
  readonly lastSeq: number;
}

/**
 * An execution (`executions`, `_id` {@link executionDocId}), folded from its lifecycle events.
 * Step events do not rewrite it: on FerretDB an update costs several inserts, and steps are most
 * of the stream (their rows are in `ledger`).
 */
export interface ExecutionDoc {
  readonly _id: string;
  readonly tenantId: string;
  readonly executionId: string;
  readonly sharedRunId?: string;
  readonly status: "running" | "paused-for-recovery" | "completed" | "failed" | "cancelled";
  readonly dagDigest?: string;
  readonly stepCount?: number;
  readonly epoch: number;
  readonly owners: readonly {
    readonly runtimeInstanceId: string;
    readonly localRunId: string;
    readonly epoch: number;
    readonly seq: number;
    readonly via: "started" | "resumed";
  }[];
  readonly pauses: readonly {
    readonly forensicsId: string;
    readonly incidentId: string;
    readonly failedRuntimeInstanceId: string;
    readonly newEpoch: number;
    readonly seq: number;
  }[];
  readonly started?: Position;
  /** Steps that will not run (`exec.step-skipped`; rare, so they do rewrite the document), in stream order. */
  readonly skipped?: readonly { readonly stepId: string; readonly reason: string; readonly seq: number }[];
  /** Map expansions (`exec.map-expanded`): the item count and caps journaled, in stream order. */
  readonly maps?: readonly {
    readonly stepId: string;
    readonly count: number;
    readonly maxConcurrency: number;
    readonly toleratedFailures: number;
    readonly itemsDigest: string;
    readonly seq: number;
  }[];
  readonly ended?: Position & {
    readonly status: string;
    readonly outputDigest?: string;
    readonly reasonCode?: string;
    readonly reasonDetail?: string;
  };
  readonly firstSeq: number;
  readonly lastSeq: number;
}

/** One recovered work item of an incident, with its timeline's progress (`incident_items`, `_id` `<incidentId>:<forensicsId>`). */
export interface IncidentItem {
  readonly _id: string;
  readonly incidentId: string;
  readonly forensicsId: string;
  readonly tenantId: string;
  readonly sharedRunId: string;
  readonly localRunId: string;
  readonly executionId?: string;
  readonly class: string;
  /** Sequence of the `recovery-planned` that listed it (absent when only its forensics events were seen). */
  readonly plannedSeq?: number;
  readonly lastType?: string;
  readonly outcome?: string;
  readonly lastSeq: number;
}

/** One runtime failure (`incidents`, `_id` = RuntimeFailureIncidentId): suspected → fenced → planned; its items are in `incident_items`. */
export interface IncidentDoc {
  readonly _id: string;
  readonly incidentId: string;
  readonly runtimeInstanceId: string;
  readonly ownerTenantId?: string;
  readonly status: "suspected" | "fenced" | "fence-failed" | "recovery-planned";
  /** Tenants with at least one item: the only tenants the incident concerns. */
  readonly tenantIds: readonly string[];
  readonly suspected?: Position & {
    readonly reasonCode: string;
    readonly reasonDetail: string;
    readonly hostIncarnation?: string;
  };
  readonly fenced?: Position & { readonly hostIncarnation: string; readonly proof: Readonly<Record<string, Scalar>> };
  readonly fenceFailures: readonly (Position & {
    readonly reasonCode: string;
    readonly reasonDetail: string;
    readonly attempt: number;
  })[];
  readonly planned?: Position & { readonly itemCount: number };
  readonly firstSeq: number;
  readonly lastSeq: number;
}

/** What the projector remembers of a runtime (`runtimes`): whose it is, for the ledger of its events. */
export interface RuntimeDoc {
  readonly _id: string;
  readonly ownerTenantId?: string;
  readonly status: string;
  readonly hostIncarnation?: string;
  readonly incidentIds: readonly string[];
  readonly lastSeq: number;
}

/**
 * The tenant's run list, newest first in O(page) (`GET /v1/runs`): FerretDB v1 filters and sorts
 * only by scanning, so the list is kept as documents found by `_id`. Each tenant's submissions get
 * ordinals 0, 1, 2, … in stream order (`run_counts`, `_id` = tenantId, holds the next one), and
 * ordinal n sits in page `floor(n / RUN_PAGE_SIZE)` of `run_pages` (`_id` {@link runPageId}).
 * A listing reads the count, one or two pages, then the runs by `_id`.
 */
export const RUN_PAGE_SIZE = 100;
export const runPageId = (tenantId: string, page: number): string => `${tenantId}:${page}`;

export interface RunCountDoc {
  readonly _id: string;
  readonly tenantId: string;
  /** Submissions so far: the next run's ordinal. */
  readonly count: number;
  readonly lastSeq: number;
}

export interface RunPageEntry {
  readonly sharedRunId: string;
  readonly ordinal: number;
  readonly seq: number;
  /** The submission's `occurredAt`. */
  readonly at: string;
}

export interface RunPageDoc {
  readonly _id: string;
  readonly tenantId: string;
  readonly page: number;
  /** In ordinal order. */
  readonly runs: readonly RunPageEntry[];
  readonly lastSeq: number;
}
