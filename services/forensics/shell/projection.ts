import type { DroverEvent } from "../../../contracts/index.ts";
import type { Projection, StoredEvent, StreamLayout } from "../../../streams/index.ts";
import { evolveExecutionDoc } from "../domain/execution-doc.ts";
import type { Fact } from "../domain/fact.ts";
import { evolveIncidentDoc, isIncidentEvent } from "../domain/incident-doc.ts";
import { forensicsRow, ledgerRows } from "../domain/ledger.ts";
import { evolveRunDoc } from "../domain/run-doc.ts";
import { evolveRuntimeDoc } from "../domain/runtime-doc.ts";
import { executionDocId } from "../domain/execution-doc.ts";
import { runDocId } from "../domain/run-doc.ts";
import { byId, dropReadModels, ensureIndexes, putIfNewer, putRow, type ReadModelDb } from "./collections.ts";

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
 * The forensics projection: folds every DROVER event into `runs`, `executions`, `runtimes`,
 * `incidents`, `forensics` and `ledger`. Each write is idempotent by stream sequence (aggregate
 * documents keep `lastSeq` and refuse older facts; rows are keyed by `<stream>:<seq>`), so the
 * runner's at-least-once delivery around a crash changes nothing. A Mongo error propagates and the
 * runner retries the same event: the read model being down never skips one. `reset` drops the
 * collections and recreates the indexes for a rebuild from sequence 1.
 */
export function forensicsProjection(m: ReadModelDb, layout: StreamLayout): Projection {
  return {
    name: PROJECTION_NAME,
    async apply(stored) {
      const f = toFact(stored, layout);
      const owner = await foldAggregate(m, f);
      if (isIncidentEvent(f.event)) {
        const fact = f as Fact<typeof f.event>;
        const doc = await byId(m.incidents, f.event.data.incidentId);
        const next = evolveIncidentDoc(doc, fact, owner);
        if (next !== doc) await putIfNewer(m.incidents, next);
      }
      const row = forensicsRow(f);
      if (row) await putRow(m.forensics, row);
      for (const r of ledgerRows(f, owner)) await putRow(m.ledger, r);
    },
    async reset() {
      await dropReadModels(m);
      await ensureIndexes(m);
    },
  };
}

/** Folds the fact into its aggregate's document; returns the runtime's owner tenant for runtime facts. */
async function foldAggregate(m: ReadModelDb, f: Fact): Promise<string | undefined> {
  const type = f.event.type;
  if (type.startsWith("run.")) {
    const fact = f as Of<"run">;
    const doc = await byId(m.runs, runDocId(fact.event.tenantId, f.aggregateId));
    const next = evolveRunDoc(doc, fact);
    if (next !== doc) await putIfNewer(m.runs, next);
  } else if (type.startsWith("exec.")) {
    const fact = f as Of<"exec">;
    const doc = await byId(m.executions, executionDocId(fact.event.tenantId, f.aggregateId));
    const next = evolveExecutionDoc(doc, fact);
    if (next !== doc) await putIfNewer(m.executions, next);
  } else if (type.startsWith("runtime.")) {
    const doc = await byId(m.runtimes, f.aggregateId);
    const next = evolveRuntimeDoc(doc, f as Of<"runtime">);
    if (next !== doc) await putIfNewer(m.runtimes, next);
    return next.ownerTenantId;
  }
  return undefined;
}
