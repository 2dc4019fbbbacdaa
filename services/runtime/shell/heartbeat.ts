import type { Clock } from "../../../platform/clock.ts";
import { encodeJson, Heartbeat, type HostIncarnation, type RuntimeInstanceId } from "../../../contracts/index.ts";
import type { RuntimeInstance } from "./runtime-instance.ts";

export interface HeartbeatDeps {
  readonly subject: string;
  readonly runtimeInstanceId: string;
  readonly hostIncarnation: string;
  readonly instance: RuntimeInstance;
  readonly publish: (subject: string, data: Uint8Array) => void;
  readonly clock: Clock;
  readonly log: (fields: Record<string, unknown>) => void;
}

/**
 * Publishes this runtime's local facts to `drover-hb.<id>` every `intervalMs` with a monotonic
 * `beat` (per host incarnation: a restarted process starts again at 1 under a new incarnation).
 * Never an endpoint, tenant or route. A failed publish is logged and the next beat tries again: a
 * missing beat is a signal for health, not a reason to stop.
 */
export class HeartbeatPublisher {
  private beat = 0;
  private timer: ReturnType<typeof setInterval> | undefined;

  constructor(
    private readonly deps: HeartbeatDeps,
    private readonly intervalMs: number,
  ) {}

  start(): void {
    this.publishNow();
    this.timer = setInterval(() => this.publishNow(), this.intervalMs);
    this.timer.unref?.();
  }

  /** Stops the interval; the caller publishes a last beat (e.g. draining) with `publishNow`. */
  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  publishNow(): void {
    const f = this.deps.instance.localFacts();
    try {
      this.deps.publish(
        this.deps.subject,
        encodeJson(
          Heartbeat,
          {
            type: "heartbeat",
            runtimeInstanceId: this.deps.runtimeInstanceId as RuntimeInstanceId,
            hostIncarnation: this.deps.hostIncarnation as HostIncarnation,
            beat: ++this.beat,
            at: this.deps.clock.now().toISOString(),
            workers: f.workers,
            activeWorkers: f.activeWorkers,
            availableWorkers: f.availableWorkers,
            queuedRuns: f.queuedRuns,
            runningRuns: f.runningRuns,
            availableSlots: f.availableSlots,
            paused: f.paused,
            draining: f.draining,
          },
          "heartbeat",
        ),
      );
    } catch (e) {
      this.deps.log({ event: "heartbeat-failed", beat: this.beat, detail: String((e as Error)?.message ?? e) });
    }
  }
}
