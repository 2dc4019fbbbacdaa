import type { HostStrategy } from "../../../platform/hosts/types.ts";
import { incarnationState, parseProcessIncarnation } from "../../../platform/hosts/proc-table.ts";
import { processSpace } from "../../../platform/process-space.ts";
import type { Roster, RuntimeSummary } from "../domain/runtime-roster.ts";
import { orphanedHost } from "./adopted-hosts.ts";
import type { ProvisionerDeps } from "./context.ts";
import { stopHosts, type LiveHost } from "./stop-hosts.ts";

/**
 * Unbound warm pool members (process hosts) of this control plane, in this process space, still
 * running, whose spawning provisioner is gone (a SIGKILL left them: platform/hosts/spawner.ts), or
 * whose exact incarnation is gone with no end recorded (killed while no provisioner watched). A
 * provisioner binds only the members it started, so no one will ever bind these: the first only
 * hold memory, the second stay listed in the pool for ever.
 */
export function orphanedMembers(d: ProvisionerDeps, roster: Roster): LiveHost[] {
  if (!d.controlPlaneId) return [];
  return [...roster.runtimes.values()].flatMap((s) => {
    const unboundHere =
      s.pool?.provider === "process" && s.pool.controlPlaneId === d.controlPlaneId && !s.pool.claimedFor;
    const h = unboundHere ? (orphanedHost(s) ?? deadHost(s)) : undefined;
    return h ? [h] : [];
  });
}

/** The host of `s` when its exact incarnation in this process space is gone but its log has no end. */
function deadHost(s: RuntimeSummary): LiveHost | undefined {
  const here = processSpace();
  const inc = s.hostIncarnation ? parseProcessIncarnation(s.hostIncarnation) : undefined;
  if (s.endedBy || s.node !== here || !inc || incarnationState(inc.pid, inc.startTime) !== "gone") return undefined;
  return {
    runtimeInstanceId: s.runtimeInstanceId,
    host: { hostIncarnation: s.hostIncarnation!, pid: inc.pid, node: here },
  };
}

/**
 * Stops the orphaned members as a planned stop stops a runtime (stop-hosts.ts): the exact incarnation
 * killed through `/proc`, then `runtime retired` with the proof (conditional on the member as read, so
 * of two provisioners doing this at once one retires it; a dead member's "kill" finds it gone and proves
 * that). Before, a SIGKILLed provisioner's members ran until killed by hand. Returns how many it found. Failure modes: as stopHosts (logged per member).
 */
export async function stopOrphanedMembers(d: ProvisionerDeps, strategy: HostStrategy, roster: Roster): Promise<number> {
  const orphans = orphanedMembers(d, roster);
  if (orphans.length === 0) return 0;
  const outcomes = await stopHosts(d, strategy, orphans, `warm pool member orphaned (its provisioner is gone)`);
  d.log("orphaned warm pool members stopped", { outcomes: Object.fromEntries(outcomes) });
  return orphans.length;
}
