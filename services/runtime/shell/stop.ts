import type { NatsConnection } from "@nats-io/transport-node";

/** What a SIGTERM stop needs of the runtime (start.ts wires it). */
export interface StopParts {
  readonly nc: NatsConnection;
  /** No new runs; accepted ones finish. */
  drain(): void;
  /** Resolves with the runs handed back once nothing runs (RuntimeInstance.whenIdle). */
  whenIdle(): Promise<readonly string[]>;
  /** The LocalRunIds still accepted (running, parked or queued) when a drain is cut short. */
  leftRuns(): readonly string[];
  /** A heartbeat now (a no-op when the connection cannot send it). */
  beat(): void;
  stopBeats(): void;
  /** The command and ops listeners. */
  closeListeners(): Promise<void>;
  log(fields: Record<string, unknown>): void;
  exit(code: number): void;
  /** How long the drain may go on while NATS is unreachable, and each closing step may take. */
  readonly budgetMs: number;
}

const timeout = (ms: number) => new Promise<"timeout">((ok) => setTimeout(() => ok("timeout"), ms).unref());

/**
 * Tracks whether the connection is up from its status events, so a stop knows whether the runs it
 * waits for can still write. Returns `downFor()`: ms since the connection was last known up (0 when up).
 */
export function watchConnection(nc: NatsConnection, now: () => number = Date.now): { downFor(): number } {
  let downSince: number | undefined;
  void (async () => {
    for await (const s of nc.status()) {
      if (s.type === "disconnect" || s.type === "reconnecting") downSince ??= now();
      if (s.type === "reconnect") downSince = undefined;
    }
  })().catch(() => undefined);
  return {
    downFor: () => (nc.isClosed() ? Number.POSITIVE_INFINITY : downSince === undefined ? 0 : now() - downSince),
  };
}

/**
 * The SIGTERM stop (docs/control-flow.md "Stopping a runtime"): no new runs, a draining heartbeat, then
 * wait for the accepted runs to end, as long as they can make progress. Every run writes to the
 * event stream, so once NATS has been unreachable for `budgetMs` (at the signal or during the
 * wait) none of them can finish: the drain is cut short (`drain-cut-short` names the runs left:
 * recovery moves them once the exit is proven, as after any host exit). Closing the listeners and
 * the connection is bounded by `budgetMs` each: a `drain()` of a connection that is down would wait
 * for a reconnect forever. Exit code 0 after a full drain, 1 after a cut-short one.
 */
export function stopOnSignal(p: StopParts, connection: { downFor(): number }): () => void {
  let stopping = false;
  return () => {
    if (stopping) return;
    stopping = true;
    p.drain();
    p.beat();
    void (async () => {
      const idle = p.whenIdle();
      let ended: readonly string[] | "cut-short" | undefined;
      while (ended === undefined) {
        const r = await Promise.race([idle, timeout(Math.min(250, p.budgetMs))]);
        if (r !== "timeout") ended = r;
        else if (connection.downFor() >= p.budgetMs) ended = "cut-short";
      }
      p.stopBeats();
      p.beat();
      await Promise.race([p.closeListeners().catch(() => undefined), timeout(p.budgetMs)]);
      const up = connection.downFor() === 0;
      // A connection that is up flushes what was published (the last beat, the runs' appends) first.
      await Promise.race([(up ? p.nc.drain() : p.nc.close()).catch(() => undefined), timeout(p.budgetMs)]);
      if (ended === "cut-short") {
        p.log({ event: "drain-cut-short", why: "NATS unreachable", left: p.leftRuns() });
        p.exit(1);
      } else {
        p.log({ event: "drained", handedBack: ended });
        p.exit(0);
      }
    })();
  };
}
