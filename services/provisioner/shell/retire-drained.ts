import { randomUUID } from "node:crypto";
import { QueueStatus, type RuntimeInstanceId } from "../../../contracts/index.ts";
import { drainStates, type VersionedRuntime } from "../../../aggregates/capacity/worker-version.ts";
import type { HostStrategy } from "../../../platform/hosts/types.ts";
import type { Roster } from "../domain/runtime-roster.ts";
import { sendCommand } from "../../../platform/runtime-client.ts";
import { deployedVersions } from "../../../platform/worker-deploys.ts";
import type { ProvisionerDeps } from "./context.ts";
import type { RosterView } from "./roster-view.ts";
import { stopHosts, type LiveHost, type StopOutcome } from "./stop-hosts.ts";

/** One drained runtime as the last check saw it (for logs and tests). */
export interface DrainSeen {
  readonly runtimeInstanceId: string;
  readonly version: string;
  readonly pinnedRuns: number;
}

/** Where drained runtimes are found and stopped: a host strategy and the hosts of it to check. */
export interface DrainSource {
  readonly strategy: HostStrategy;
  /** The live hosts this provisioner may retire through `strategy`, as the roster is now (adopted ones included). */
  liveHosts(roster: Roster): readonly LiveHost[] | Promise<readonly LiveHost[]>;
}

/**
 * Retires this provisioner's process runtimes and the control plane's runtime Pods that drain (docs/worker-versions.md): a runtime of a
 * worker version that is no longer the tenant's current one, or one started for pinned runs, takes
 * only the runs pinned to its version; once its own GetQueueStatus shows no run queued or running
 * for `idleMs` (so a pinned run dispatched a moment ago is seen first), it is stopped like a planned
 * stop (stop-hosts.ts: the exact incarnation killed, `runtime retired` with the proof). `retiring`
 * names the runtimes being stopped, whose exits are then not recorded as crashes.
 * "Current" is the tenant's last `worker.deployed` when there is one (read once per check).
 * Failure modes: an unreachable runtime or a store error skips it until the next check.
 */
export function watchDrainedRuntimes(
  d: ProvisionerDeps,
  sources: readonly DrainSource[],
  roster: RosterView,
  retiring: Set<string>,
  opts: { readonly everyMs: number; readonly idleMs: number },
): { stop(): Promise<void>; readonly seen: Map<string, DrainSeen> } {
  const idleSince = new Map<string, number>();
  const seen = new Map<string, DrainSeen>();
  let running: Promise<void> = Promise.resolve();
  const check = async () => {
    const r = await roster.current();
    // The tenant's last `worker.deployed` decides what is current, as for admission and the API.
    const deployed = deployedVersions(d.store);
    const all: VersionedRuntime[] = [...r.runtimes.values()].map((s) => ({
      runtimeInstanceId: s.runtimeInstanceId,
      ...(s.tenantId ? { tenantId: s.tenantId } : {}),
      status: s.endedBy ? "retired" : "ready",
      ...(s.worker ? { worker: s.worker } : {}),
    }));
    const hosts = await Promise.all(
      sources.map(async (src) => (await src.liveHosts(r)).map((h) => ({ strategy: src.strategy, h }))),
    );
    for (const { strategy, h } of hosts.flat()) {
      const s = r.runtimes.get(h.runtimeInstanceId);
      if (!s?.worker || !s.tenantId || !s.endpoint || !s.transport || !s.capacityPublished || s.endedBy) continue;
      const state = drainStates(all, s.tenantId, () => 0, await deployed(s.tenantId)).find(
        (x) => x.runtimeInstanceId === s.runtimeInstanceId,
      );
      if (!state?.draining) {
        idleSince.delete(s.runtimeInstanceId);
        continue;
      }
      const status = await sendCommand(
        s.endpoint,
        s.transport,
        {
          operation: "GetQueueStatus",
          payload: {},
          runtimeInstanceId: s.runtimeInstanceId as RuntimeInstanceId,
          correlationId: `drain-${randomUUID()}`,
        },
        d.commandTokenFor(s.runtimeInstanceId),
        3_000,
      ).catch(() => undefined);
      const q = status?.success ? QueueStatus.safeParse(status.payload.queue) : undefined;
      if (!q?.success) continue;
      const pinnedRuns = q.data.queuedRuns + q.data.runningRuns + (q.data.parkedRuns ?? 0);
      seen.set(s.runtimeInstanceId, { runtimeInstanceId: s.runtimeInstanceId, version: s.worker.version, pinnedRuns });
      const now = d.clock.now().getTime();
      if (pinnedRuns > 0) idleSince.delete(s.runtimeInstanceId);
      else if (!idleSince.has(s.runtimeInstanceId)) idleSince.set(s.runtimeInstanceId, now);
      if (pinnedRuns > 0 || now - idleSince.get(s.runtimeInstanceId)! < opts.idleMs) continue;
      retiring.add(s.runtimeInstanceId);
      const stopStart = d.clock.now().getTime();
      const out = await stopHosts(d, strategy, [h], `worker version ${s.worker.version.slice(0, 12)} drained`);
      const outcome = out.get(h.runtimeInstanceId);
      d.log(drainStopMessage(outcome), {
        runtimeInstanceId: s.runtimeInstanceId,
        outcome: outcome ?? "not-recorded",
        // How long the host stop took: past the stale-heartbeat bound, recovery suspects the runtime
        // first and the stop is left to its failure path (outcome `left-to-recovery`, no `retired`).
        stopMs: d.clock.now().getTime() - stopStart,
      });
    }
  };
  let stopped = false;
  const timer = setInterval(() => {
    if (stopped) return;
    running = running.then(check).catch((e) => d.log("drained-runtime check failed", { err: String(e) }));
  }, opts.everyMs);
  return {
    seen,
    async stop() {
      stopped = true;
      clearInterval(timer);
      await running;
    },
  };
}

/**
 * The log line of a drained runtime's stop, saying what happened: only `retired` retired it; the
 * others left it to recovery's failure path (suspected, fenced or ended first; a kill not proven in
 * time) or recorded nothing (an unknown runtime, a store error).
 */
export function drainStopMessage(outcome: StopOutcome | undefined): string {
  switch (outcome) {
    case "retired":
      return "drained runtime retired";
    case "left-to-recovery":
      return "drained runtime left to recovery: suspected, fenced or ended before its stop";
    case "kill-timeout":
      return "drained runtime not proven stopped: left to recovery";
    case "unknown-runtime":
      return "drained runtime not registered: nothing retired";
    case undefined:
      return "drained runtime stop not recorded (store error): retried at the next check";
  }
}
