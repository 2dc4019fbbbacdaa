/** A pass slower than this (or started this long after it was asked for) is logged with its phases. */
export const SLOW_PASS_MS = 200;

/**
 * Where one admission pass's wall time goes (issue 15: in P=20 recoveries admission wrote nothing
 * for seconds while replacements' capacity was already published, and its log said nothing). Each
 * call the pass awaits is timed under a label (count, summed and longest wait: placements run side
 * by side, so sums can exceed the pass), and what the pass skipped or decided is counted. Costs two
 * clock reads per awaited call; nothing is kept once the pass is reported.
 */
export class PassProbe {
  private readonly t0 = performance.now();
  private readonly waits = new Map<string, { n: number; sumMs: number; maxMs: number }>();
  private readonly counts = new Map<string, number>();

  /** `askedAt`: when the first request for this pass came (performance.now()), before any pass in flight ended. */
  constructor(private readonly askedAt = performance.now()) {}

  /** Awaits `p`, timed under `label`. */
  async time<T>(label: string, p: Promise<T>): Promise<T> {
    const t = performance.now();
    try {
      return await p;
    } finally {
      const ms = performance.now() - t;
      const w = this.waits.get(label) ?? { n: 0, sumMs: 0, maxMs: 0 };
      w.n++;
      w.sumMs += ms;
      w.maxMs = Math.max(w.maxMs, ms);
      this.waits.set(label, w);
    }
  }

  count(label: string): void {
    this.counts.set(label, (this.counts.get(label) ?? 0) + 1);
  }

  /** The pass's wall time so far and how long it waited to start, in ms. */
  get passMs(): number {
    return performance.now() - this.t0;
  }
  get queuedMs(): number {
    return this.t0 - this.askedAt;
  }

  /** One log record: pass and queue time, then `label: "count×, sum ms, max ms"` per awaited call, and the counts. */
  report(): Record<string, unknown> {
    const r = Math.round;
    return {
      passMs: r(this.passMs),
      queuedMs: r(this.queuedMs),
      waits: Object.fromEntries([...this.waits].map(([k, w]) => [k, `${w.n}× sum ${r(w.sumMs)} max ${r(w.maxMs)}`])),
      counts: Object.fromEntries(this.counts),
    };
  }
}

/** `p`, timed under `label` when there is a probe. */
export const timed = <T>(probe: PassProbe | undefined, label: string, p: Promise<T>): Promise<T> =>
  probe ? probe.time(label, p) : p;
