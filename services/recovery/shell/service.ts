import type { JetStreamClient } from "@nats-io/jetstream";
import type { Status } from "@nats-io/transport-node";
import type { RuntimeInstanceId } from "../../../contracts/index.ts";
import { staleHeartbeatMsOf } from "../../../contracts/index.ts";
import { follow, type Follower } from "../../../platform/follow.ts";
import { foldedUpToRuntime } from "../domain/plan-gate.ts";
import { eventTypeFilter, lastHeartbeatMessage, runtimeRef } from "../../../streams/index.ts";
import { RUN_PLACEMENT_EVENTS } from "../../../aggregates/run.ts";
import type { RecoveryDeps } from "./deps.ts";
import type { StreamLayout } from "../../../streams/layout.ts";
import { fence, fencerOf } from "./fence.ts";
import type { Held } from "../domain/suspicion-budget.ts";
import { detect } from "./health.ts";
import { controlPlaneOf, hostProviderOf, type RuntimeRecord } from "../domain/runtime-health.ts";
import { reconcile } from "./reconcile.ts";
import { advanceTimeline } from "./timeline.ts";
import { restoreFromSnapshot, snapshotWriter } from "../../../platform/snapshots/snapshotted.ts";
import type { SnapshotOptions } from "../../../platform/snapshots/options.ts";
import { mapAtMost } from "../../../platform/map-at-most.ts";
import type { Disconnect } from "../../../platform/nats-auth/disconnects.ts";
import { watchConnectionLoss } from "./connection-lost.ts";

/** nats.js's default reconnectTimeWait (2 s) plus its jitter: how late a runtime may reconnect after us. */
const RECONNECT_ALLOWANCE_MS = 2_500;
/**
 * After a reconnect, the longest silence not counted while no heartbeat at all reaches this replica:
 * a restarted nats-server answers clients before JetStream has recovered its streams, and until it
 * has, no runtime's beat is stored (seen: a runtime suspected 4 s after recovery's reconnect, the
 * beats not yet flowing). The first beat that arrives starts the allowance instead.
 */
const FRESH_BEATS_WAIT_MS = 15_000;
/** Forensics timelines advanced at once in a pass (each at most one conditional append). */
const TIMELINES_AT_ONCE = 16;

/**
 * The event subjects recovery folds. Of a run, only the events that move what recovery reads
 * (RUN_PLACEMENT_EVENTS): not its submission, the largest event of every run, nor requests that change none of it.
 */
export const recoveryEventFilters = (layout: StreamLayout): string[] => [
  ...RUN_PLACEMENT_EVENTS.map((t) => eventTypeFilter(layout, t)),
  `${layout.eventPrefix}.runtime.>`,
  `${layout.eventPrefix}.forensics.>`,
  `${layout.eventPrefix}.exec.*.*.resumed`,
  `${layout.eventPrefix}.exec.*.*.completed`,
];

export interface RecoveryService {
  readonly ready: Promise<void>;
  /** Writes a snapshot of the folded state now, if it moved past the last one (tests, benches). */
  writeSnapshot(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * Runs recovery: follows runs (the events that place, move and end them), runtimes, forensics, execution
 * resume/completion facts and heartbeats; on every change and tick: detect → fence (one kill at a time per
 * runtime, not awaited by the pass) → reconcile fenced runtimes and runtimes retired by a planned stop
 * (host-stopped, with its proof; one reconcile at a time per runtime, not awaited either) → advance forensics
 * timelines. Three owners, never merged: health decides, the host strategy proves the boundary, the
 * reconciler moves work.
 */
export async function startRecovery(
  deps: RecoveryDeps & {
    js: JetStreamClient;
    tickMs?: number;
    /** The NATS connection's status events: while disconnected, and for one bound after, no runtime is stale. */
    status?: AsyncIterable<Status>;
    /**
     * Subscribes to the server's advisories of closed DROVER connections (the kicker's connection:
     * platform/nats-auth/disconnects.ts); returns a stop function. Absent on an open server: no
     * lost-connection signal, the host's and the heartbeats' remain.
     */
    disconnects?: (onDisconnect: (d: Disconnect) => void) => () => void;
    /** Every pass: the runtimes the fence-storm cap kept from being suspected (empty when none), and those newly held; for metrics. */
    onHeld?: (held: readonly Held[], newlyHeld: readonly Held[]) => void;
    snapshots?: SnapshotOptions;
  },
): Promise<RecoveryService> {
  deps.log.info("recovery starting");
  // From the snapshot when there is a trusted one (only the tail is folded), else from sequence 1.
  const snap = deps.snapshots;
  const { fromSeq } = snap
    ? await restoreFromSnapshot(snap.store, deps.state, { ...snap, log: deps.log })
    : { fromSeq: 1 };
  const writer =
    snap?.policy &&
    snapshotWriter(snap.store, deps.state, snap.policy, deps.env.clock, {
      ...snap,
      log: deps.log,
      startSeq: fromSeq - 1,
    });
  // The log position folded by the follower (recovery's own appends are applied ahead of it).
  let followedSeq = fromSeq - 1;
  const events: Follower = await follow(
    deps.js,
    {
      stream: deps.layout.eventStream,
      filters: recoveryEventFilters(deps.layout),
      fromSeq,
    },
    (m) => {
      followedSeq = m.seq;
      deps.state.apply(m);
      writer?.applied(m.seq);
    },
  );
  // Heartbeat silence counts from here: this replica's catch-up, then each NATS reconnect. While
  // disconnected it sees no beats at all, so nothing is stale (a NATS outage is not a dead fleet).
  let viewLiveSince = Number.POSITIVE_INFINITY;
  // Set on a reconnect until the first heartbeat after it arrives (see FRESH_BEATS_WAIT_MS).
  let awaitingBeats = false;
  const beats: Follower = await follow(
    deps.js,
    { stream: deps.layout.heartbeatStream, filters: [`${deps.layout.heartbeatPrefix}.>`], lastPerSubject: true },
    (m) => {
      deps.state.applyBeat(m, Math.floor(m.info.timestampNanos / 1e6));
      if (!awaitingBeats) return;
      awaitingBeats = false;
      viewLiveSince = Math.min(viewLiveSince, deps.env.clock.now().getTime() + RECONNECT_ALLOWANCE_MS);
      deps.log.info("heartbeats flowing again: silence counts from now");
    },
  );
  for (const f of [events, beats]) f.done.catch((e) => deps.log.fatal({ err: String(e) }, "recovery follower stopped"));
  const fencing = new Set<string>();
  const reconciling = new Set<string>();
  let running = false,
    again = false,
    stopped = false,
    // No decision before both folds caught up: a half-replayed log shows runtimes as published whose
    // later retirement or heartbeats are not folded yet, and health would suspect them (issue 23).
    caughtUp = false;
  const staleMs = staleHeartbeatMsOf(deps.config);
  const jsm = await deps.js.jetstreamManager();
  // The stream's own last beat of a runtime: what health checks before calling it stale, so a
  // follower that lags (its consumer being recreated after a NATS restart) never fences anyone.
  const latestBeat = async (runtimeInstanceId: string): Promise<void> => {
    const m = await lastHeartbeatMessage(jsm, deps.layout, runtimeInstanceId);
    if (m) deps.state.applyBeat(m, m.time.getTime());
  };
  void (async () => {
    for await (const s of deps.status ?? []) {
      if (s.type === "disconnect") viewLiveSince = Number.POSITIVE_INFINITY;
      else if (s.type === "reconnect" && caughtUp) {
        // Runtimes reconnect on their own schedule (nats.js: every 2 s, with jitter): they get that
        // long on top of the bound to be heard from again.
        viewLiveSince = deps.env.clock.now().getTime() + RECONNECT_ALLOWANCE_MS + FRESH_BEATS_WAIT_MS;
        awaitingBeats = true;
        deps.log.info({ staleMs }, "NATS reconnected: heartbeat silence counts once heartbeats flow again");
      }
    }
  })().catch(() => undefined);

  // One log line when a runtime starts or stops being held by the fence-storm cap, not one a pass.
  let holding = new Set<string>();
  const noteHeld = (held: readonly Held[]) => {
    const now = new Set(held.map((h) => h.runtimeInstanceId));
    const entered = held.filter((h) => !holding.has(h.runtimeInstanceId));
    for (const h of entered)
      deps.log.warn(
        { runtime: h.runtimeInstanceId, signal: h.code, reason: h.reason, detail: h.holdDetail },
        "runtime silent but not suspected: fence-storm cap",
      );
    for (const id of holding) if (!now.has(id)) deps.log.info({ runtime: id }, "fence-storm cap released");
    holding = now;
    deps.onHeld?.(held, entered);
  };

  // A live runtime's NATS connection closed and its command endpoint refuses: a health signal (connection-lost.ts).
  const loss = watchConnectionLoss(deps, () => void pass(), undefined, latestBeat);
  let stopDisconnects: (() => void) | undefined;

  // A runtime no host strategy of this replica can kill is left suspected (said once): a fence that
  // returned at once and asked for another pass spun the pass in microtasks and starved the event loop.
  const unfenceable = new Set<string>();
  const canFence = (rt: RuntimeRecord): boolean => {
    if (fencerOf(deps, rt)) return true;
    if (!unfenceable.has(rt.runtimeInstanceId)) {
      unfenceable.add(rt.runtimeInstanceId);
      deps.log.error(
        { runtime: rt.runtimeInstanceId, provider: hostProviderOf(rt) },
        "suspected runtime: no host strategy here can fence it",
      );
    }
    return false;
  };

  const pass = async (): Promise<void> => {
    if (stopped || !caughtUp) return;
    if (running) {
      again = true;
      return;
    }
    running = true;
    try {
      do {
        again = false;
        // Runtimes seen again after a drop are read from the log before anything is decided about them.
        for (const id of [...deps.state.retired.unverified]) {
          const h = await deps.store.read(runtimeRef(id), { skipUndecodable: true });
          deps.state.replaceRuntime(id as RuntimeInstanceId, h.events);
        }
        loss.prune();
        const held = await detect(deps, deps.env.clock.now().getTime(), staleMs, viewLiveSince, latestBeat, loss.lost);
        noteHeld(held);
        const unverified = deps.state.retired.unverified;
        for (const rt of deps.state.runtimes.values()) {
          if (
            !unverified.has(rt.runtimeInstanceId) &&
            rt.suspected &&
            !rt.fenced &&
            !fencing.has(rt.runtimeInstanceId) &&
            controlPlaneOf(rt) === deps.config.controlPlaneId &&
            canFence(rt)
          ) {
            fencing.add(rt.runtimeInstanceId);
            void fence(deps, rt)
              .catch((e) => deps.log.error({ runtime: rt.runtimeInstanceId, err: String(e) }, "fence failed"))
              .finally(() => {
                fencing.delete(rt.runtimeInstanceId);
                void pass();
              });
          }
        }
        // Fenced runtimes are reconciled side by side (their items are disjoint) and outside the pass,
        // one reconcile at a time per runtime: awaited here, a runtime fenced during another's
        // reconcile waited for it to end before its own began (1.1–1.6 s at load ~20), and so did the
        // next pass's suspicions and fences.
        for (const rt of deps.state.runtimes.values())
          if (
            !unverified.has(rt.runtimeInstanceId) &&
            (rt.fenced || (rt.stopped && controlPlaneOf(rt) === deps.config.controlPlaneId)) &&
            !rt.planned &&
            !reconciling.has(rt.runtimeInstanceId) &&
            foldedUpToRuntime(rt, followedSeq)
          ) {
            const id = rt.runtimeInstanceId;
            reconciling.add(id);
            // A failure is retried by the next tick's pass, not at once (a store that is down is not hammered).
            void reconcile(deps, rt).then(
              () => {
                reconciling.delete(id);
                void pass();
              },
              (e) => {
                reconciling.delete(id);
                deps.log.error({ runtime: id, err: String(e) }, "reconcile failed; retried next tick");
              },
            );
          }
        await mapAtMost([...deps.state.forensics.values()], TIMELINES_AT_ONCE, (f) => advanceTimeline(deps, f));
      } while (again && !stopped);
    } catch (e) {
      deps.log.error({ err: String(e) }, "recovery pass failed; retried next tick");
    } finally {
      running = false;
    }
  };

  let timer: ReturnType<typeof setInterval> | undefined;
  const ready = Promise.all([events.caughtUp, beats.caughtUp]).then(() => {
    deps.log.info(
      { fromSeq, runs: deps.state.runs.size, runtimes: deps.state.runtimes.size },
      "recovery state caught up",
    );
    if (stopped) return;
    caughtUp = true;
    viewLiveSince = deps.env.clock.now().getTime();
    stopDisconnects = deps.disconnects?.((d) => loss.onDisconnect(d));
    // One pass for the events folded in one turn of the event loop (a consumer's batch), not one each.
    let soon = false;
    deps.state.onChange(() => {
      if (soon) return;
      soon = true;
      setImmediate(() => {
        soon = false;
        void pass();
      });
    });
    timer = setInterval(() => void pass(), deps.tickMs ?? 200);
    void pass();
  });
  return {
    ready,
    writeSnapshot: async () => writer?.flush(),
    async stop() {
      stopped = true;
      clearInterval(timer);
      stopDisconnects?.();
      await Promise.all([events.stop(), beats.stop()]);
      await writer?.stop();
    },
  };
}
