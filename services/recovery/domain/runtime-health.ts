import { assertNever } from "../../../contracts/assert-never.ts";
import type { DataOf, DroverEvent, PlannedStop, RuntimeInstanceId } from "../../../contracts/index.ts";

export type RuntimeEvent = Extract<DroverEvent, { type: `runtime.${string}` }>;

/** What recovery knows of one runtime, folded from its events (pure). */
export interface RuntimeRecord {
  readonly runtimeInstanceId: RuntimeInstanceId;
  readonly registration?: DataOf<"runtime.registered">;
  /** A warm pool member's registration (it has no `registration` until bound, and then under another id). */
  readonly pooled?: DataOf<"runtime.pool-member-registered">;
  /** The pool member was claimed: its host belongs to the bound runtime from then on, never to this record. */
  readonly claimed?: boolean;
  readonly host?: DataOf<"runtime.host-started">;
  readonly published: boolean;
  readonly suspected?: DataOf<"runtime.suspected">;
  readonly fenced?: DataOf<"runtime.fenced">;
  readonly fenceFailures: number;
  readonly planned: boolean;
  readonly retired: boolean;
  /** The retirement was a planned stop with its host boundary proven: its runs move without an incident. */
  readonly stopped?: PlannedStop;
  readonly exited?: DataOf<"runtime.host-exited">;
  readonly lastSeq: number;
  /**
   * The last sequence folded that was not a host observation of its own host (`host-exited` of that
   * incarnation): what a fence decided at `lastSeq` L is still decided on while this is at most L
   * (domain/fence-append.ts). Absent in a record restored from an older snapshot.
   */
  readonly decidedSeq?: number;
  /** Server time (ms) the runtime became publishable: the staleness clock starts there. */
  readonly publishedAtMs?: number;
  /** Server time (ms) its host's exit was recorded (`host-exited`). */
  readonly exitedAtMs?: number;
  /** Server time (ms) its provisioner said it is stopping it (`draining`, before the kill of a planned stop). */
  readonly drainingAtMs?: number;
  /** Its command endpoint (`endpoint-published`) and the host incarnation that serves it. */
  readonly endpoint?: { readonly url: string; readonly hostIncarnation: string };
  /** The forensics ids of the recovery plan's items (`recovery-planned`). */
  readonly plannedItemIds?: readonly string[];
}

export const emptyRuntime = (id: RuntimeInstanceId): RuntimeRecord => ({
  runtimeInstanceId: id,
  published: false,
  fenceFailures: 0,
  planned: false,
  retired: false,
  lastSeq: 0,
  decidedSeq: 0,
});

export function evolveRuntime(r: RuntimeRecord, e: RuntimeEvent, seq: number, atMs: number): RuntimeRecord {
  if (seq <= r.lastSeq) return r;
  const observation = e.type === "runtime.host-exited" && e.data.hostIncarnation === r.host?.hostIncarnation;
  const next = { ...r, lastSeq: seq, ...(observation ? {} : { decidedSeq: seq }) };
  switch (e.type) {
    case "runtime.registered":
      return next.registration ? next : { ...next, registration: e.data };
    case "runtime.host-started":
      return next.host ? next : { ...next, host: e.data };
    case "runtime.capacity-published":
      return { ...next, published: true, publishedAtMs: atMs };
    case "runtime.suspected":
      return next.suspected ? next : { ...next, suspected: e.data };
    case "runtime.fenced":
      return next.fenced ? next : { ...next, fenced: e.data };
    case "runtime.fence-failed":
      return { ...next, fenceFailures: next.fenceFailures + 1 };
    case "runtime.recovery-planned":
      return next.planned ? next : { ...next, planned: true, plannedItemIds: e.data.items.map((i) => i.forensicsId) };
    case "runtime.retired":
      return next.retired ? next : { ...next, retired: true, ...(e.data.stopped ? { stopped: e.data.stopped } : {}) };
    case "runtime.host-exited":
      return next.exited ? next : { ...next, exited: e.data, exitedAtMs: atMs };
    case "runtime.pool-member-registered":
      return next.pooled ? next : { ...next, pooled: e.data };
    case "runtime.pool-member-claimed":
      return { ...next, claimed: true };
    case "runtime.draining":
      return next.drainingAtMs !== undefined ? next : { ...next, drainingAtMs: atMs };
    case "runtime.endpoint-published":
      return { ...next, endpoint: { url: e.data.endpoint, hostIncarnation: e.data.hostIncarnation } };
    case "runtime.pool-member-ready":
    case "runtime.host-start-requested":
    case "runtime.host-start-failed":
    case "runtime.readiness-layer-passed":
      return next;
    default:
      return assertNever(e, "runtime event");
  }
}

/** The control plane a runtime (or warm pool member) belongs to. */
export const controlPlaneOf = (r: RuntimeRecord): string | undefined =>
  r.registration?.controlPlaneId ?? r.pooled?.controlPlaneId;
/** The host provider of a runtime (or warm pool member). */
export const hostProviderOf = (r: RuntimeRecord): DataOf<"runtime.registered">["hostProvider"] | undefined =>
  r.registration?.hostProvider ?? r.pooled?.hostProvider;

/**
 * Since when health treats a runtime as stopping: its provisioner's `draining` (a planned stop), or its
 * own latest heartbeat saying `draining` with nothing running or queued (`drainingBeatAtMs`, the server's time it was stored: a SIGTERM
 * from outside drover, docs/control-flow.md "Stopping a runtime"), whichever is later. Its heartbeat
 * subject is its own (streams/heartbeat-message.ts), so a runtime can say this of itself only; and it
 * only buys the drain grace after its last word, never an exemption from a host's proof.
 */
export const stoppingSince = (r: RuntimeRecord, drainingBeatAtMs?: number): number | undefined =>
  r.drainingAtMs === undefined
    ? drainingBeatAtMs
    : drainingBeatAtMs === undefined
      ? r.drainingAtMs
      : Math.max(r.drainingAtMs, drainingBeatAtMs);

/** The signals that suspect a runtime: a host-proven death, or a health signal (`connection-lost`, `heartbeat-stale`). */
export type SuspicionCode = "host-exited" | "pod-deleted" | "connection-lost" | "heartbeat-stale";

/** Why a live runtime is unsafe now, if it is: the first signal wins, fastest first (recovery.md "Detect"). */
export function suspicion(
  r: RuntimeRecord,
  lastBeatAtMs: number | undefined,
  now: number,
  staleMs: number,
  viewLiveSinceMs = 0,
  /** How long a runtime its provisioner is stopping (`draining`) may be silent before silence counts (the kill budget). */
  drainGraceMs = 0,
  /** What shows its NATS connection closed and its command endpoint refusing connections (connection-lost.ts), if anything. */
  connectionLost?: string,
  /** When its latest heartbeat saying `draining` was stored, if one did (a stop from outside drover). */
  drainingBeatAtMs?: number,
): { code: SuspicionCode; detail: string } | undefined {
  if (r.suspected || r.fenced || r.retired || r.claimed || !r.host) return undefined;
  if (r.exited && r.exited.hostIncarnation === r.host.hostIncarnation) {
    const code = r.exited.kind === "exited" ? "host-exited" : "pod-deleted";
    return {
      code,
      detail:
        `${r.exited.kind} (exit ${r.exited.exitCode ?? "none"}, signal ${r.exited.signal ?? "none"}) ${r.exited.detail}`.trim(),
    };
  }
  if (!r.published) return undefined;
  const stopping = stoppingSince(r, drainingBeatAtMs);
  // A stopping runtime closes its connection and its listeners as the last steps of its drain.
  if (connectionLost !== undefined && stopping === undefined)
    return { code: "connection-lost", detail: connectionLost };
  // Silence counts only while this reader's view of heartbeats is live: after a start or a NATS
  // reconnect, every runtime gets a whole bound to be heard from again (no fencing storm).
  // A planned stop silences the runtime before its boundary is proven and `retired` appended: a Pod's
  // delete outlasted a 750 ms bound under load, and recovery fenced a retiring runtime (a false
  // incident; the k8s worker-versions test saw no `retired`). Its silence counts once the kill budget is spent.
  // So does a runtime's own drain's (SIGTERM from outside drover): its exit is proven and recorded
  // after its last beat, and until the kill budget after that beat, silence is not a failure.
  const draining = stopping === undefined ? 0 : stopping + drainGraceMs;
  const since = Math.max(lastBeatAtMs ?? 0, r.publishedAtMs ?? 0, viewLiveSinceMs, draining);
  if (now - since > staleMs)
    return { code: "heartbeat-stale", detail: `no heartbeat for ${now - since} ms (bound ${staleMs} ms)` };
  return undefined;
}
