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
  private soonTimer: ReturnType<typeof setTimeout> | undefined;

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
    if (this.soonTimer) clearTimeout(this.soonTimer);
    this.timer = undefined;
    this.soonTimer = undefined;
  }

  /**
   * A place was freed (a run ended or parked): one extra beat within `soonMs`, however many places
   * free meanwhile (coalesced), so admission sees the place at once instead of up to an interval
   * later (docs/security.md "Floods": a quiet tenant's run waited for the next beat to see the place
   * its own last run had freed). Nothing while stopped. The beat is the runtime's own count, as ever.
   */
  soon(soonMs = Math.min(50, this.intervalMs)): void {
    if (!this.timer || this.soonTimer) return;
    this.soonTimer = setTimeout(() => {
      this.soonTimer = undefined;
      if (this.timer) this.publishNow();
    }, soonMs);
    this.soonTimer.unref?.();
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
