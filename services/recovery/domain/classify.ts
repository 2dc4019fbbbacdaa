import {
  inFlightForensicsId,
  localQueuedForensicsId,
  type ExecutionId,
  type LocalRunId,
  type ForensicsId,
  type RecoveryClass,
  type SharedRunId,
  type TenantId,
} from "../../../contracts/index.ts";
import type { RunState } from "../../../aggregates/run.ts";

/** One run of the inventory: its tenant and its folded state (from the run aggregate, never the dead runtime). */
export interface InventoryRun {
  readonly tenantId: TenantId;
  readonly sharedRunId: SharedRunId;
  readonly state: RunState;
}

/** A work item to recover, with its deterministic ForensicsId parts. */
export interface RecoveryItem {
  readonly class: RecoveryClass;
  readonly tenantId: TenantId;
  readonly sharedRunId: SharedRunId;
  readonly localRunId: LocalRunId;
  readonly executionId?: ExecutionId;
  /** Run aggregate sequence the transition must expect. */
  readonly runSeq: number;
}

/**
 * The failed runtime's inventory, classified (recovery.md "Classify and recover"): runs whose
 * latest placement is the fenced runtime and that are not finished. A run with an ExecutionId →
 * `in-flight-execution` (resume the same execution); an admitted or dispatched run that never
 * started → `local-queued` (redispatch under a new LocalRunId). In-flight items first,
 * then local-queued; within a class by SharedRunId, so every reconciler run plans the same order.
 * Runs on other runtimes — and so every tenant without work there — never appear.
 */
export function classifyInventory(runtimeInstanceId: string, runs: readonly InventoryRun[]): RecoveryItem[] {
  const items: RecoveryItem[] = [];
  for (const r of runs) {
    const p = r.state.placement;
    if (!p || p.runtimeInstanceId !== runtimeInstanceId) continue;
    const placed = r.state.status === "admitted" || r.state.status === "dispatched" || r.state.status === "started";
    if (!placed) continue;
    // An ExecutionId means the DAG started at some point: even a resume placement that died before
    // it began (recovery of recovery) must be resumed again, never redispatched as new work.
    if (r.state.executionId) {
      items.push({
        class: "in-flight-execution",
        tenantId: r.tenantId,
        sharedRunId: r.sharedRunId,
        localRunId: p.localRunId,
        executionId: r.state.executionId,
        runSeq: r.state.lastSeq,
      });
    } else {
      items.push({
        class: "local-queued",
        tenantId: r.tenantId,
        sharedRunId: r.sharedRunId,
        localRunId: p.localRunId,
        runSeq: r.state.lastSeq,
      });
    }
  }
  const order = (c: RecoveryClass) => (c === "in-flight-execution" ? 0 : 1);
  return items.sort(
    (a, b) =>
      order(a.class) - order(b.class) || (a.sharedRunId < b.sharedRunId ? -1 : a.sharedRunId > b.sharedRunId ? 1 : 0),
  );
}

/**
 * The deterministic ForensicsId of an item (identities-and-events.md), built by the contracts'
 * single builder so its shape is validated in one place: a retry can never create a second record.
 */
export function forensicsIdOf(
  item: Pick<RecoveryItem, "class" | "executionId" | "sharedRunId" | "localRunId">,
): ForensicsId {
  if (item.class === "local-queued") return localQueuedForensicsId(item.sharedRunId, item.localRunId);
  if (!item.executionId) throw new Error(`in-flight item of run ${item.sharedRunId} has no execution`);
  return inFlightForensicsId(item.executionId, item.sharedRunId, item.localRunId);
}
