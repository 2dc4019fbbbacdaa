import { createHash } from "node:crypto";
import {
  isDroverError,
  PLANNED_STOP_PREFIX,
  type DroverEvent,
  type FenceProof,
  type HostIncarnation,
  type RuntimeFailureIncidentId,
} from "../../../contracts/index.ts";
import type { HostFacts, HostStrategy } from "../../../platform/hosts/types.ts";
import { runtimeRef, type StoredEvent } from "../../../streams/index.ts";
import { stamp, type ProvisionerDeps } from "./context.ts";

const MAX_CONFLICTS = 8;

/** A host this provisioner started and that is still running. */
export interface LiveHost {
  readonly runtimeInstanceId: string;
  readonly host: HostFacts;
}

/** What a deliberate stop did to one runtime (for the log and tests). */
export type StopOutcome = "retired" | "left-to-recovery" | "kill-timeout" | "unknown-runtime";

/** The id naming one runtime's planned stop: one per RuntimeInstanceId (a runtime is retired once). */
export const plannedStopIdOf = (runtimeInstanceId: string): RuntimeFailureIncidentId =>
  `${PLANNED_STOP_PREFIX}${createHash("sha256").update(runtimeInstanceId).digest("hex").slice(0, 24)}` as RuntimeFailureIncidentId;

/**
 * Says the runtime is being stopped (`runtime.draining`, conditional on the runtime as read) before
 * the kill silences it: recovery then gives its silence the kill budget before calling it stale, and
 * admission places nothing more there. `claimed`: recovery's failure path (or an end) got there
 * first, and the stop leaves the runtime to it. A store error or repeated conflicts only skip the mark.
 */
async function markDraining(d: ProvisionerDeps, h: LiveHost, cause: string): Promise<"marked" | "claimed" | "skipped"> {
  const ref = runtimeRef(h.runtimeInstanceId);
  try {
    for (let conflicts = 0; conflicts < MAX_CONFLICTS; conflicts++) {
      const hist = await d.store.read(ref);
      const reg = hist.events.find((s) => s.event.type === "runtime.registered")?.event;
      if (reg?.type !== "runtime.registered") return "skipped";
      if (claimedElsewhere(hist.events)) return "claimed";
      if (hist.events.some((s) => s.event.type === "runtime.draining")) return "marked";
      const e = stamp(
        d,
        "runtime.draining",
        { reason: `stopping: ${cause}`.slice(0, 500) },
        stopOrigin(d, reg, `host-stopping:${h.host.hostIncarnation}`),
      );
      try {
        await d.store.append(ref, e, { expectedSeq: hist.lastSeq });
        return "marked";
      } catch (err) {
        if (!isDroverError(err, "version-conflict")) throw err;
      }
    }
  } catch (err) {
    d.log("planned stop: could not mark the runtime draining", {
      runtimeInstanceId: h.runtimeInstanceId,
      err: String(err),
    });
  }
  return "skipped";
}

/** The origin of a stop's events: the runtime's own correlation and tenant (a pool member has none). */
export const stopOrigin = (d: ProvisionerDeps, reg: Registration, causationId: string) => ({
  instanceId: d.instanceId,
  correlationId: reg.correlationId,
  causationId,
  ...(reg.type === "runtime.registered" && reg.data.tenantId ? { tenantId: reg.data.tenantId } : {}),
});

/**
 * The `runtime retired` of a planned stop (reason `host-stopped`), its host's end proven by `proof`:
 * the provisioner's own stop (below) and a drain from outside drover (drained-exit.ts) record the same.
 */
export const hostStoppedRetired = (
  d: ProvisionerDeps,
  reg: Registration,
  runtimeInstanceId: string,
  hostIncarnation: string,
  detail: string,
  proof: FenceProof,
): DroverEvent =>
  stamp(
    d,
    "runtime.retired",
    {
      reason: `host-stopped: ${detail}`.slice(0, 500),
      stopped: {
        stopId: plannedStopIdOf(runtimeInstanceId),
        reason: { code: "host-stopped", detail },
        hostIncarnation: hostIncarnation as HostIncarnation,
        proof,
      },
    },
    stopOrigin(d, reg, `host-stopped:${hostIncarnation}`),
  );

export type Registration = Extract<DroverEvent, { type: "runtime.registered" | "runtime.pool-member-registered" }>;

/**
 * A runtime's registration, or an unbound warm pool member's: a planned stop retires a member it
 * kills as it retires a runtime, so the next provisioner's pool does not count it as held for ever.
 */
export function registrationOf(h: readonly StoredEvent[]): Registration | undefined {
  const e = h.find(
    (s) => s.event.type === "runtime.registered" || s.event.type === "runtime.pool-member-registered",
  )?.event;
  return e?.type === "runtime.registered" || e?.type === "runtime.pool-member-registered" ? e : undefined;
}

/** Ended already, or recovery's failure path owns it: a stop must not claim it. */
export function claimedElsewhere(h: readonly StoredEvent[]): boolean {
  return h.some((s) =>
    [
      "runtime.suspected",
      "runtime.fenced",
      "runtime.host-exited",
      "runtime.host-start-failed",
      "runtime.retired",
      // A member claimed meanwhile: its host is the bound runtime's, stopped under that id.
      "runtime.pool-member-claimed",
    ].includes(s.event.type),
  );
}

/**
 * A deliberate stop (SIGTERM of the provisioner: `make stop`, a rollout) is not a crash. For each
 * process host this provisioner started and that still runs: kill the exact incarnation and wait for
 * the boundary (process reaped), then append `runtime retired` with `stopped` (reason `host-stopped`,
 * the proof, and a `stop-…` id), conditional on the runtime as read. Recovery then moves the runtime's
 * runs without an incident (same transitions as after `fenced`, never before the proof is in the log).
 *
 * The caller stops recording host exits first, so this kill is not reported as `host-exited`. A
 * runtime that was suspected, fenced or ended meanwhile is left to recovery's failure path (its
 * incident stands); a kill that times out appends nothing (the heartbeat goes stale, and recovery
 * suspects, fences and opens an incident: an unproven boundary is never called a planned stop).
 * Failure modes: store errors are logged per runtime; the others still stop.
 */
export async function stopHosts(
  d: ProvisionerDeps,
  strategy: HostStrategy,
  hosts: readonly LiveHost[],
  cause = `provisioner ${d.instanceId} stopped`,
): Promise<Map<string, StopOutcome>> {
  const out = new Map<string, StopOutcome>();
  await Promise.all(
    hosts.map(async (h) => {
      try {
        out.set(h.runtimeInstanceId, await stopOne(d, strategy, h, cause));
      } catch (e) {
        d.log("could not record a planned stop", { runtimeInstanceId: h.runtimeInstanceId, err: String(e) });
      }
    }),
  );
  return out;
}

async function stopOne(d: ProvisionerDeps, strategy: HostStrategy, h: LiveHost, cause: string): Promise<StopOutcome> {
  const ref = runtimeRef(h.runtimeInstanceId);
  if ((await markDraining(d, h, cause)) === "claimed") return "left-to-recovery";
  const k = await strategy.kill(h.runtimeInstanceId, h.host, d.killBudgetMs);
  if (k.outcome !== "killed") {
    d.log("planned stop: host not proven gone; left to recovery", { runtimeInstanceId: h.runtimeInstanceId, ...k });
    return "kill-timeout";
  }
  const proof: FenceProof = k.proof;
  const detail =
    proof.kind === "process-exit"
      ? `${cause}; host pid ${proof.pid} exited (signal ${proof.signal ?? "none"})`
      : `${cause}; pod ${proof.podName} (uid ${proof.podUid}) gone`;
  for (let conflicts = 0; ; conflicts++) {
    const hist = await d.store.read(ref);
    const reg = registrationOf(hist.events);
    if (!reg) return "unknown-runtime";
    if (claimedElsewhere(hist.events)) return "left-to-recovery";
    const e = hostStoppedRetired(d, reg, h.runtimeInstanceId, h.host.hostIncarnation, detail, proof);
    try {
      await d.store.append(ref, e, { expectedSeq: hist.lastSeq });
      return "retired";
    } catch (err) {
      if (!isDroverError(err, "version-conflict") || conflicts >= MAX_CONFLICTS) throw err;
    }
  }
}
