import { Gauge, Histogram, type Registry } from "prom-client";
import { isOpenIncident } from "../domain/incident-clock.ts";
import { controlPlaneOf } from "../domain/runtime-health.ts";
import type { RecoveryState } from "./state.ts";

// A SIGKILLed process host is fenced in ~0.1 s; a stale heartbeat waits out its bound; a resume waits for a replacement runtime.
const BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120, 300];

/**
 * Recovery's metrics on the process registry. Call once the service is ready: facts replayed at
 * start-up are not timed again (a restart does not count old incidents twice).
 *
 *  - `drover_recovery_failure_to_fenced_seconds{basis}`: a runtime's failure → its `fenced`;
 *  - `drover_recovery_failure_to_resumed_seconds{basis}`: a runtime's failure → each of its
 *    in-flight executions `resumed` on another runtime;
 *    `basis` says what the failure time is (domain/incident-clock.ts): `host-exit` (the host's
 *    recorded exit or Pod deletion: the kill, as the provisioner saw it) or `last-heartbeat` (the
 *    kill itself is not observable: an upper bound from the last proof of life);
 *  - `drover_incidents_open`: this control plane's failure incidents not yet recovered (suspected,
 *    not planned, or with a planned item whose forensics record has not ended).
 */
export function registerRecoveryMetrics(registry: Registry, state: RecoveryState, controlPlaneId: string): void {
  const histogram = (stage: string) =>
    new Histogram({
      name: `drover_recovery_failure_to_${stage}_seconds`,
      help: `time from a runtime's failure (see basis) to ${stage === "fenced" ? "its fenced" : "each in-flight execution resumed elsewhere"}`,
      labelNames: ["basis"],
      buckets: BUCKETS,
      registers: [registry],
    });
  const toFenced = histogram("fenced");
  const toResumed = histogram("resumed");
  state.onTiming = (t) => (t.stage === "fenced" ? toFenced : toResumed).observe({ basis: t.basis }, t.ms / 1000);
  new Gauge({
    name: "drover_incidents_open",
    help: "failure incidents of this control plane's runtimes not yet recovered",
    registers: [registry],
    collect() {
      const ended = (id: string) =>
        // A record not in memory was dropped by the bound, which drops only completed ones.
        state.forensics.get(id)?.types.has("forensics.execution-recovery-completed") ??
        state.retired.droppedForensics > 0;
      let open = 0;
      for (const rt of state.runtimes.values())
        if (controlPlaneOf(rt) === controlPlaneId && isOpenIncident(rt, ended)) open++;
      this.set(open);
    },
  });
}
