import { isDroverError, type EventDraft } from "../../../contracts/index.ts";
import { isTerminal } from "../../../aggregates/run.ts";
import { envelope } from "../../../platform/envelope.ts";
import { forensicsRef } from "../../../streams/index.ts";
import type { RecoveryDeps } from "./deps.ts";
import type { ForensicsRecord } from "./state.ts";

/**
 * Completes each recovered item's forensics timeline from what the log shows happened next:
 * replacement selected (admitted elsewhere) → local run registered (dispatched) → resume context
 * seeded + DAG resume started (exec resumed on the replacement) → DAG resume completed → recovery
 * completed (run finished). Each fact is appended once, in order, conditional on the record's
 * sequence; a tenant without recovered work never gets a record.
 */
export async function advanceTimeline(deps: RecoveryDeps, f: ForensicsRecord): Promise<void> {
  const item = f.item;
  if (!item || f.types.has("forensics.execution-recovery-completed")) return;
  const run = deps.state.runs.get(`${f.tenantId}/${item.sharedRunId}`)?.state;
  if (!run) return;
  const facts: EventDraft[] = [];
  const common = {
    forensicsId: item.forensicsId,
    incidentId: item.incidentId,
    class: item.class,
    sharedRunId: item.sharedRunId,
    failedRuntimeInstanceId: item.failedRuntimeInstanceId,
    failedLocalRunId: item.failedLocalRunId,
    ...(item.executionId ? { executionId: item.executionId } : {}),
  };
  const p = run.placement;
  if (p && p.localRunId !== item.failedLocalRunId) {
    const replacementRuntimeInstanceId = p.runtimeInstanceId;
    facts.push({ type: "forensics.replacement-runtime-selected", data: { ...common, replacementRuntimeInstanceId } });
    if (p.dispatchedSeq) {
      const data = { ...common, replacementRuntimeInstanceId, replacementLocalRunId: p.localRunId };
      facts.push({ type: "forensics.replacement-local-run-registered", data });
    }
  }
  if (item.class === "in-flight-execution" && item.executionId) {
    const x = deps.state.execs.get(item.executionId);
    if (x?.resumed && x.resumed.runtimeInstanceId !== item.failedRuntimeInstanceId) {
      const { completedSteps, runtimeInstanceId: replacementRuntimeInstanceId, epoch } = x.resumed;
      facts.push({ type: "forensics.resume-context-seeded", data: { ...common, completedSteps } });
      facts.push({ type: "forensics.dag-resume-started", data: { ...common, replacementRuntimeInstanceId, epoch } });
      if (x.completedDigest) {
        const data = { ...common, outputDigest: x.completedDigest };
        facts.push({ type: "forensics.dag-resume-completed", data });
      }
    }
  }
  if (isTerminal(run.status) && (run.status === "completed" || run.status === "failed" || run.status === "cancelled")) {
    facts.push({ type: "forensics.execution-recovery-completed", data: { ...common, outcome: run.status } });
  }
  // Each fact is appended once: those already in the record are dropped, the rest keep their order.
  const next = facts.filter((n) => !f.types.has(n.type));
  if (next.length === 0) return;
  const events = next.map((n) =>
    envelope(deps.env, n.type, n.data, {
      tenantId: f.tenantId,
      correlationId: item.sharedRunId,
      causationId: `timeline:${f.forensicsId}`,
    }),
  );
  try {
    const appended = await deps.store.appendAll(forensicsRef(f.tenantId, f.forensicsId), events, {
      expectedSeq: f.lastSeq,
    });
    appended.forEach((a, i) =>
      deps.state.applyOwn(
        `${deps.layout.eventPrefix}.forensics.${f.tenantId}.${f.forensicsId}.${events[i]!.type.split(".")[1]}`,
        events[i]!,
        a.seq,
      ),
    );
  } catch (e) {
    if (!isDroverError(e, "version-conflict")) throw e;
  }
}
