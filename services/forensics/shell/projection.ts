import type { DroverEvent } from "../../../contracts/index.ts";
import {
  executionDocId,
  RUN_PAGE_SIZE,
  runDocId,
  runPageId,
  storedLedgerChunk,
  type LedgerRow,
  type RunDoc,
} from "../../../contracts/read-models.ts";
import type { Projection, StoredEvent, StreamLayout } from "../../../streams/index.ts";
import { evolveExecutionDoc } from "../domain/execution-doc.ts";
import { mayHoldNul, storable, type Fact } from "../domain/fact.ts";
import {
  evolveIncidentDoc,
  evolveIncidentItem,
  incidentItemId,
  isIncidentEvent,
  itemIdsOf,
} from "../domain/incident-doc.ts";
import { forensicsRow, ledgerRows } from "../domain/ledger.ts";
import { placeLedgerRow } from "../domain/ledger-lanes.ts";
import { evolveRunDoc } from "../domain/run-doc.ts";
import { appendToRunList } from "../domain/run-list.ts";
import { evolveRuntimeDoc } from "../domain/runtime-doc.ts";
import { dropReadModels, ensureIndexes, type ReadModelDb } from "./collections.ts";
import { docCache, type DocCache } from "./doc-cache.ts";

export const PROJECTION_NAME = "forensics";

type Of<P extends string> = Fact<Extract<DroverEvent, { type: `${P}.${string}` }>>;

/**
 * The stored event as a fact: the aggregate id is read from the subject
 * (`<prefix>.<aggregate>.<tenant>.<id>.<event>` or `<prefix>.runtime.<id>.<event>`), because run and
 * execution events do not all repeat their own id.
 */
export function toFact(e: StoredEvent, layout: StreamLayout): Fact {
  const tokens = e.subject.slice(layout.eventPrefix.length + 1).split(".");
  const aggregateId = (tokens[0] === "runtime" ? tokens[1] : tokens[2]) ?? "";
  return { stream: layout.eventStream, seq: e.seq, storedAt: e.time.toISOString(), aggregateId, event: e.event };
}

/**
 * The forensics projection: folds every DROVER event into `runs`, `executions`,
 * `runtimes`, `incidents`, `incident_items`, `forensics` and `ledger`. Each write is idempotent by
 * stream sequence (aggregate documents keep `lastSeq` and refuse older facts; rows are keyed by
 * sequence and inserted once), so the runner's at-least-once delivery around a crash changes
 * nothing. Events are applied in batches (each touched document written once per batch). A Mongo
 * error is reported to `onApplyError` and propagates, and the runner retries the same batch: the
 * read model being down never skips one. `reset` drops the collections and
 * recreates the indexes for a rebuild from sequence 1.
 */
export function forensicsProjection(
  m: ReadModelDb,
  layout: StreamLayout,
  onApplyError?: (e: unknown, seq: number) => void,
  writable: () => boolean = () => true,
): Projection {
  const cache = docCache();
  // Folds the batch in memory, then writes each touched document once and the rows in one call per collection.
  const applyBatch = async (events: readonly StoredEvent[]): Promise<void> => {
    // Not the writer any more (lease lost): refuse, so the runner neither writes nor advances.
    if (!writable()) throw new Error("forensics writer stopped: not writing the read models");
    try {
      for (const stored of events) await applyFact(m, cache, toFact(stored, layout));
      await cache.flush();
    } catch (e) {
      // The runner retries the same batch until it applies: say so, or a stuck projector is silent.
      cache.clear();
      onApplyError?.(e, events[0]?.seq ?? 0);
      throw e;
    }
  };
  return {
    name: PROJECTION_NAME,
    apply: (stored) => applyBatch([stored]),
    applyBatch,
    async reset() {
      if (!writable()) throw new Error("forensics writer stopped: not dropping the read models");
      cache.clear();
      await dropReadModels(m);
      await ensureIndexes(m);
      cache.startEmpty();
    },
  };
}

/** Applies one fact to every read model it touches, each write idempotent on its own. */
async function applyFact(m: ReadModelDb, cache: DocCache, f: Fact): Promise<void> {
  const owner = await foldAggregate(m, cache, f);
  if (isIncidentEvent(f.event)) {
    const fact = f as Fact<typeof f.event>;
    const doc = await cache.get(m.incidents, f.event.data.incidentId);
    cache.put(m.incidents, doc, evolveIncidentDoc(doc, fact, owner));
    for (const forensicsId of itemIdsOf(f.event)) {
      const item = await cache.get(m.incidentItems, incidentItemId(f.event.data.incidentId, forensicsId));
      cache.put(m.incidentItems, item, evolveIncidentItem(item, fact, forensicsId));
    }
  }
  const row = forensicsRow(f);
  if (row) cache.insert(m.forensics, row);
  for (const r of ledgerRows(f, owner)) {
    const count = await cache.get(m.ledgerCounts, r.tenantId);
    const placed = placeLedgerRow(count, r);
    if (!placed) continue;
    // Rows (and page starts) are flushed before documents, so a count never says "placed" of a row not stored.
    // A flush writes the rows of one page and run key as one chunk (contracts: StoredLedgerChunk).
    cache.insertGrouped(m.ledger, `${placed.row.page}|${placed.row.runKey ?? ""}`, placed.row, ledgerChunk);
    if (placed.pageStart) cache.insert(m.ledgerPages, placed.pageStart);
    cache.put(m.ledgerCounts, count, placed.count);
  }
}

/**
 * The stored chunk of rows: sanitised before it is encoded when its JSON may hold a NUL (an escape a
 * read turns back into a NUL); its own fields are sanitised when the chunks are written (insertRows).
 */
function ledgerChunk(rows: LedgerRow[]) {
  const chunk = storedLedgerChunk(rows);
  return mayHoldNul(chunk.rows) ? storedLedgerChunk(rows.map((r) => storable(r))) : chunk;
}

async function listRun(m: ReadModelDb, cache: DocCache, f: Of<"run">, run: RunDoc): Promise<void> {
  const tenantId = f.event.tenantId;
  const count = await cache.get(m.runCounts, tenantId);
  const pageNo = Math.floor((count?.count ?? 0) / RUN_PAGE_SIZE);
  const page = await cache.get(m.runPages, runPageId(tenantId, pageNo));
  const next = appendToRunList(count, (n) => (n === pageNo ? page : undefined), tenantId, {
    sharedRunId: run.sharedRunId,
    seq: f.seq,
    at: f.event.occurredAt,
  });
  if (!next) return;
  // The page before the count: a flush writes collections in the order they were first put (see appendToRunList).
  cache.put(m.runPages, page, next.page);
  cache.put(m.runCounts, count, next.count);
  if (!run.rerunOf) return;
  const original = await cache.get(m.runs, runDocId(tenantId, run.rerunOf));
  if (original && !original.rerunIds?.includes(run.sharedRunId) && f.seq > original.lastSeq)
    cache.put(m.runs, original, {
      ...original,
      rerunIds: [...(original.rerunIds ?? []), run.sharedRunId],
      lastSeq: f.seq,
    });
}

/** Folds the fact into its aggregate's documents; returns the runtime's owner tenant for runtime facts. */
async function foldAggregate(m: ReadModelDb, cache: DocCache, f: Fact): Promise<string | undefined> {
  const type = f.event.type;
  if (type.startsWith("run.")) {
    const fact = f as Of<"run">;
    const doc = await cache.get(m.runs, runDocId(fact.event.tenantId, f.aggregateId));
    const next = evolveRunDoc(doc, fact);
    cache.put(m.runs, doc, next);
    // A run's first submission puts it in its tenant's list, and links a rerun to the run it reruns.
    if (next.submitted && !doc?.submitted) await listRun(m, cache, fact, next);
  } else if (type.startsWith("exec.")) {
    const fact = f as Of<"exec">;
    const doc = await cache.get(m.executions, executionDocId(fact.event.tenantId, f.aggregateId));
    cache.put(m.executions, doc, evolveExecutionDoc(doc, fact));
  } else if (type.startsWith("runtime.")) {
    const doc = await cache.get(m.runtimes, f.aggregateId);
    const next = evolveRuntimeDoc(doc, f as Of<"runtime">);
    cache.put(m.runtimes, doc, next);
    return next.ownerTenantId;
  }
  return undefined;
}
