import type { DroverEvent } from "../../contracts/index.ts";
import type { SequencedEvent } from "../execution.ts";
import { diverged, match, type Divergence, type ValidationResult } from "./result.ts";

/** A fact that moves work for an incident: what may only happen after `fenced`. */
const MOVES = new Set([
  "exec.paused-for-recovery",
  "run.requeued-for-resume",
  "run.requeued-for-local-queued-recovery",
]);

const incidentOf = (e: DroverEvent): string | undefined =>
  (e.data as { incidentId?: unknown } | null)?.incidentId as string | undefined;

/**
 * Where the host boundary of `incidentId` was proven: its `runtime fenced`, or, for a planned stop
 * (`stop-…` id), the `runtime retired` whose `stopped` names it and carries the proof.
 */
function boundaryOf(
  incidentId: string,
  events: readonly SequencedEvent[],
): { seq: number; hostIncarnation: string } | undefined {
  for (const { seq, event: e } of events) {
    if (e.type === "runtime.fenced" && e.data.incidentId === incidentId)
      return { seq, hostIncarnation: e.data.hostIncarnation };
    if (e.type === "runtime.retired" && e.data.stopped?.stopId === incidentId)
      return { seq, hostIncarnation: e.data.stopped.hostIncarnation };
  }
  return undefined;
}

/**
 * Checks one runtime failure incident against the stream (recovery.md "Fence" and "Forensics"):
 * no work moves (paused-for-recovery, requeue, forensics) before the incident's `fenced` (for a planned
 * stop, `stop-…`: before the `retired` that carries its proof); no event
 * written by the fenced host incarnation (`writer.hostIncarnation`) has a stream sequence after
 * `fenced`; every recovery item (named by `recovery-planned` or by a move) has a forensics record.
 *
 * `events` must hold every stream event from the incident's `suspected` on (in stream order):
 * a write the caller left out cannot be judged. An incident without `fenced` (fence-timeout) matches
 * only if nothing moved. With `tenantId`, only that tenant's events and items (and runtime events)
 * are judged: a tenant's view of an incident never reports another tenant's work. Returns `match`
 * or the divergence with the lowest stream sequence. Pure.
 */
export function validateIncident(
  incidentId: string,
  all: readonly SequencedEvent[],
  tenantId?: string,
): ValidationResult {
  const scope = tenantId ? `incident ${incidentId} (tenant ${tenantId})` : `incident ${incidentId}`;
  const events = tenantId
    ? all.filter((e) => e.event.tenantId === tenantId || e.event.type.startsWith("runtime."))
    : all;
  const fenced = boundaryOf(incidentId, events);
  const found: Omit<Divergence, "scope">[] = [];
  const items = new Map<string, number>(); // forensicsId → first seq naming it as an item
  const recorded = new Set<string>();
  let checked = 0;
  for (const { seq, event } of events) {
    checked += 1;
    if (fenced && seq > fenced.seq && event.writer.hostIncarnation === fenced.hostIncarnation) {
      const who = event.writer.runtimeInstanceId ?? event.writer.instanceId;
      found.push({
        invariant: "write-after-fenced",
        seq,
        message: `${event.type} at seq ${seq} written by ${who} from host incarnation ${fenced.hostIncarnation}, fenced at seq ${fenced.seq}`,
      });
    }
    if (incidentOf(event) !== incidentId) continue;
    const moves = MOVES.has(event.type) || event.type.startsWith("forensics.");
    if (moves && (!fenced || seq < fenced.seq)) {
      found.push({
        invariant: "work-moved-before-fenced",
        seq,
        message: `${event.type} at seq ${seq} moves work of incident ${incidentId} ${fenced ? `before its fenced at seq ${fenced.seq}` : "that was never fenced"}`,
      });
    }
    if (event.type === "runtime.recovery-planned")
      for (const i of event.data.items)
        if ((!tenantId || i.tenantId === tenantId) && !items.has(i.forensicsId)) items.set(i.forensicsId, seq);
    if (MOVES.has(event.type)) {
      const id = (event.data as { forensicsId: string }).forensicsId;
      if (!items.has(id)) items.set(id, seq);
    }
    if (event.type.startsWith("forensics.")) recorded.add((event.data as { forensicsId: string }).forensicsId);
  }
  for (const [id, seq] of items) {
    if (!recorded.has(id))
      found.push({
        invariant: "missing-forensics-record",
        seq,
        message: `recovery item ${id} (named at seq ${seq}) has no forensics record`,
      });
  }
  const first = found.reduce<Omit<Divergence, "scope"> | undefined>((a, b) => (!a || b.seq < a.seq ? b : a), undefined);
  if (first) return diverged(scope, checked, first);
  return match(
    scope,
    checked,
    fenced ? [`${items.size} recovery item(s)`] : [`incident ${incidentId} is not fenced; no work moved`],
  );
}
