import { probeEndpoint, type ProbeResult } from "../../../platform/endpoint-probe.ts";
import type { Disconnect } from "../../../platform/nats-auth/disconnects.ts";
import { controlPlaneOf } from "../domain/runtime-health.ts";
import type { RecoveryDeps } from "./deps.ts";

/** How long one TCP connect to a runtime's command endpoint may take: a dead host's port is refused at once. */
const PROBE_TIMEOUT_MS = 1_000;

/** The runtimes whose connection is lost, with the evidence health writes into their suspicion. */
export interface ConnectionLoss {
  /** Evidence by RuntimeInstanceId: the NATS connection closed and the command endpoint refused. */
  readonly lost: ReadonlyMap<string, string>;
  /** The server's advisory that a connection of the DROVER account closed (disconnects.ts). */
  onDisconnect(d: Disconnect): void;
  /** Forgets the evidence of runtimes suspected, retired or gone meanwhile. */
  prune(): void;
}

/**
 * A health signal faster than a host's own report where that report is slow (a real kubelet notices
 * a dead container at its next relist, ~1 s, then the Pod watch): when the server says a live
 * runtime's NATS connection closed, one TCP connect to its command endpoint tells whether anything
 * still listens there. Refused (the host answered with a reset) while the connection is gone is a
 * lost connection, and health suspects the runtime (budgeted by the fence-storm cap like heartbeat
 * silence: neither is a host's proof). Accepted or no answer proves nothing (a NATS restart, a
 * reconnect, a partition): nothing happens, and the other signals stand. Transports without an
 * endpoint (nats) are never probed. The fence still proves the boundary before any work moves.
 *
 * A stopping runtime is not probed: its provisioner's `draining`, or its own heartbeat saying
 * `draining` with nothing left in it (a SIGTERM from outside drover: closing its connection and its
 * listeners are the last steps of its drain). Its last beat may reach this replica's heartbeat
 * follower after the server's advisory, so a refused probe reads the stream's last beat
 * (`latestBeat`) before it counts.
 */
export function watchConnectionLoss(
  deps: RecoveryDeps,
  changed: () => void,
  probe: (endpoint: string, timeoutMs: number) => Promise<ProbeResult> = probeEndpoint,
  /** Folds the stream's own last beat of a runtime into the state (service.ts). */
  latestBeat: (runtimeInstanceId: string) => Promise<void> = () => Promise.resolve(),
): ConnectionLoss {
  const lost = new Map<string, string>();
  const probing = new Set<string>();
  const live = (id: string) => {
    const rt = deps.state.runtimes.get(id);
    return rt &&
      controlPlaneOf(rt) === deps.config.controlPlaneId &&
      rt.published &&
      !rt.suspected &&
      !rt.fenced &&
      !rt.retired &&
      !rt.claimed &&
      rt.drainingAtMs === undefined &&
      !deps.state.drainingBeatMs.has(id)
      ? rt
      : undefined;
  };
  return {
    lost,
    onDisconnect(d) {
      const rt = live(d.user);
      const endpoint = rt?.endpoint;
      if (!rt || !endpoint || endpoint.hostIncarnation !== rt.host?.hostIncarnation) return;
      if (probing.has(rt.runtimeInstanceId) || lost.has(rt.runtimeInstanceId)) return;
      probing.add(rt.runtimeInstanceId);
      const t0 = performance.now();
      void probe(endpoint.url, PROBE_TIMEOUT_MS)
        .then(async (result) => {
          if (result === "refused") await latestBeat(rt.runtimeInstanceId);
          const facts = { runtime: rt.runtimeInstanceId, endpoint: endpoint.url, reason: d.reason, result };
          const ms = Math.round(performance.now() - t0);
          if (result !== "refused" || !live(rt.runtimeInstanceId))
            return deps.log.info({ ...facts, ms }, "runtime's NATS connection closed; not a lost connection");
          lost.set(
            rt.runtimeInstanceId,
            `its NATS connection closed (${d.reason || "no reason given"}) and ${endpoint.url} refused a TCP connection`,
          );
          deps.log.warn({ ...facts, ms }, "runtime's connection lost");
          changed();
        })
        .catch((e: unknown) =>
          deps.log.warn({ runtime: rt.runtimeInstanceId, err: String(e) }, "endpoint probe failed"),
        )
        .finally(() => probing.delete(rt.runtimeInstanceId));
    },
    prune() {
      for (const id of lost.keys()) if (!live(id)) lost.delete(id);
    },
  };
}
