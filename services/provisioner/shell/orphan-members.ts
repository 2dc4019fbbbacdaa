import type { HostStrategy } from "../../../platform/hosts/types.ts";
import type { Roster } from "../domain/runtime-roster.ts";
import { orphanedHost } from "./adopted-hosts.ts";
import type { ProvisionerDeps } from "./context.ts";
import { stopHosts, type LiveHost } from "./stop-hosts.ts";

/**
 * Unbound warm pool members (process hosts) of this control plane, in this process space, still
 * running, whose spawning provisioner is gone (a SIGKILL left them: platform/hosts/spawner.ts). A
 * provisioner binds only the members it started, so no one will ever bind these: they only hold memory.
 */
export function orphanedMembers(d: ProvisionerDeps, roster: Roster): LiveHost[] {
  if (!d.controlPlaneId) return [];
  return [...roster.runtimes.values()].flatMap((s) => {
    const unboundHere =
      s.pool?.provider === "process" && s.pool.controlPlaneId === d.controlPlaneId && !s.pool.claimedFor;
    const h = unboundHere ? orphanedHost(s) : undefined;
    return h ? [h] : [];
  });
}

/**
 * Stops the orphaned members as a planned stop stops a runtime (stop-hosts.ts): the exact incarnation
 * killed through `/proc`, then `runtime retired` with the proof (conditional on the member as read, so
 * of two provisioners doing this at once one retires it). Before, a SIGKILLed provisioner's members
 * ran until killed by hand. Returns how many it found. Failure modes: as stopHosts (logged per member).
 */
export async function stopOrphanedMembers(d: ProvisionerDeps, strategy: HostStrategy, roster: Roster): Promise<number> {
  const orphans = orphanedMembers(d, roster);
  if (orphans.length === 0) return 0;
  const outcomes = await stopHosts(d, strategy, orphans, `warm pool member orphaned (its provisioner is gone)`);
  d.log("orphaned warm pool members stopped", { outcomes: Object.fromEntries(outcomes) });
  return orphans.length;
}
