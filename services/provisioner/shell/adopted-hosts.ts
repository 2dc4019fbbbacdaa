import { processSpace } from "../../../platform/process-space.ts";
import { isOrphanedHost } from "../../../platform/hosts/spawner.ts";
import { runtimeRef } from "../../../streams/index.ts";
import type { Roster, RuntimeSummary } from "../domain/runtime-roster.ts";
import type { ProvisionerDeps } from "./context.ts";
import type { LiveHost } from "./stop-hosts.ts";

/**
 * The process hosts this provisioner adopts (services/provisioner/README.md "Adopted runtimes"): runtimes of its
 * control plane, in its process space, that have not ended and whose spawning provisioner is gone
 * (a SIGKILL left them running: platform/hosts/spawner.ts). A planned stop and the drained-runtime
 * retirement treat them as the runtimes it started: marked draining, killed at their exact
 * incarnation (through /proc, they are not its children), retired with the proof. `own` are the
 * hosts it started itself (listed once). Warm pool members are not adopted: unbound, they hold no
 * work, and no one can bind them without their token.
 * Failure modes: a store error rejects (the caller's stop or check logs it and goes on).
 */
export async function adoptedHosts(d: ProvisionerDeps, roster: Roster, own: readonly LiveHost[]): Promise<LiveHost[]> {
  if (!d.controlPlaneId) return [];
  const mine = new Set(own.map((h) => h.runtimeInstanceId));
  const candidates = [...roster.runtimes.values()].flatMap((s) => {
    const h = !s.pool && !mine.has(s.runtimeInstanceId) ? orphanedHost(s) : undefined;
    return h ? [h] : [];
  });
  const out: LiveHost[] = [];
  for (const h of candidates) {
    const reg = (await d.store.read(runtimeRef(h.runtimeInstanceId))).events.find(
      (e) => e.event.type === "runtime.registered",
    )?.event;
    if (reg?.type !== "runtime.registered" || reg.data.controlPlaneId !== d.controlPlaneId) continue;
    out.push(h);
  }
  return out;
}

/**
 * The host of `s` when it has not ended, runs in this process space and its spawning provisioner is
 * gone (platform/hosts/spawner.ts): an orphan a provisioner of its control plane may stop.
 */
export function orphanedHost(s: RuntimeSummary): LiveHost | undefined {
  const here = processSpace();
  if (s.endedBy || s.node !== here || !s.hostIncarnation?.startsWith("pid:") || !isOrphanedHost(s.hostIncarnation))
    return undefined;
  return {
    runtimeInstanceId: s.runtimeInstanceId,
    host: { hostIncarnation: s.hostIncarnation, ...(s.pid ? { pid: s.pid } : {}), node: here },
  };
}
