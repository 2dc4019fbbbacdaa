import type { JetStreamClient } from "@nats-io/jetstream";
import { follow, type Follower } from "../../../platform/follow.ts";
import { FairShare } from "../domain/fair-queue.ts";
import { FlowKeys } from "./flow-gate.ts";
import { startChildRuns } from "./child-runs.ts";
import type { AdmissionDeps } from "./deps.ts";
import { admissionPass, type AdmissionState } from "./placer.ts";
import { restoreFromSnapshot, snapshotWriter } from "../../../platform/snapshots/snapshotted.ts";
import type { SnapshotOptions } from "../../../platform/snapshots/options.ts";
import { verifyRuns } from "./verify-runs.ts";
import { trace, traceDelivery, tracing } from "./trace.ts";
import { PassProbe, SLOW_PASS_MS } from "./pass-probe.ts";

/** How long a pass runs before it yields to a newer index (see `yieldWanted`). */
const PASS_SLICE_MS = 50;

export interface AdmissionService {
  /** Resolves once the run index has caught up with the stream (before that, no decision is taken). */
  readonly ready: Promise<void>;
  /** Resolves after the next full pass completes (its runtime commands may still be in flight). */
  nextPass(): Promise<void>;
  /** Writes a snapshot of the run index now, if it moved past the last one (tests, benches). */
  writeSnapshot(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * Runs admission: follows run and scale-out events into the index, and runs an admission pass
 * whenever the index changes, whenever the capacity view announces a runtime that may have become
 * placeable, and on every tick (capacity changes arrive through the Redis view).
 * Passes never overlap within a replica; other replicas are kept honest by conditional appends.
 */
export async function startAdmission(
  deps: AdmissionDeps & { js: JetStreamClient; tickMs?: number; snapshots?: SnapshotOptions },
): Promise<AdmissionService> {
  const prefix = deps.layout.eventPrefix;
  deps.log.info("admission starting");
  // From the snapshot when there is a trusted one (only the tail is folded), else from sequence 1.
  const snap = deps.snapshots;
  const { fromSeq } = snap
    ? await restoreFromSnapshot(snap.store, deps.index, { ...snap, log: deps.log })
    : { fromSeq: 1 };
  const writer =
    snap?.policy &&
    snapshotWriter(snap.store, deps.index, snap.policy, deps.env.clock, {
      ...snap,
      log: deps.log,
      startSeq: fromSeq - 1,
    });
  const follower: Follower = await follow(
    deps.js,
    { stream: deps.layout.eventStream, filters: [`${prefix}.run.>`, `${prefix}.scaleout.>`], fromSeq },
    (m) => {
      if (tracing) traceDelivery(m, prefix);
      deps.index.apply(m);
      writer?.applied(m.seq);
    },
  );
  follower.done.catch((e) => deps.log.fatal({ err: String(e) }, "run follower stopped"));
  // Run steps' child runs: submitted and cancelled here, never by a runtime (docs/control-flow.md).
  const children = await startChildRuns(deps);
  children.done.catch((e) => deps.log.fatal({ err: String(e) }, "child-run follower stopped"));
  // A pass with work left yields once the index changed and it ran for PASS_SLICE_MS: the next one
  // (at once) orders the newcomers with everyone, so a run submitted during a long pass (a flood's
  // queue decisions being recorded) does not wait for its end. Cheap since a pass starts in O(tenants).
  let passStartMs = 0;
  const clockMs = () => deps.env.clock.now().getTime();
  const state: AdmissionState = {
    yieldWanted: () => again && clockMs() - passStartMs >= PASS_SLICE_MS,
    busy: new Set(),
    resuming: new Map(),
    fair: new FairShare(),
    flow: new FlowKeys(),
    sends: new Set(),
    beatAts: new Map(),
    onSendDone: () => pass(),
  };
  let running: Promise<void> | undefined;
  let again = false;
  // When the pass to run next was first asked for (performance.now()): how long it queued behind the one in flight.
  let askedAt: number | undefined;
  let stopped = false;
  // No decision before the index has caught up with the log: a pass on a half-folded index would
  // count fewer scale-out generations than the log holds and collide with ended requests (issue 23).
  let caughtUp = false;
  let waiters: (() => void)[] = [];

  const pass = (): void => {
    if (stopped || !caughtUp) return;
    askedAt ??= performance.now();
    if (running) {
      again = true;
      return;
    }
    running = (async () => {
      do {
        again = false;
        const done = waiters;
        waiters = [];
        // Runs first seen after terminal runs were dropped are read from the log before any decision.
        passStartMs = clockMs();
        const probe = (state.probe = new PassProbe(askedAt));
        askedAt = undefined;
        await probe
          .time("verify", verifyRuns(deps.index, deps.store))
          .then(() => admissionPass(deps, state))
          .catch((e) => deps.log.error({ err: String(e) }, "admission pass failed"));
        if (tracing) trace({ ev: "pass", start: passStartMs, ms: clockMs() - passStartMs });
        // Where a slow pass's time went (pass-probe.ts): what it awaited, how long, and what it decided.
        if (probe.passMs >= SLOW_PASS_MS || probe.queuedMs >= SLOW_PASS_MS)
          deps.log.info(probe.report(), "admission pass slow");
        for (const w of done) w();
      } while (again && !stopped);
    })().finally(() => {
      running = undefined;
      // Asked for after the loop's last check (a waiter resolved above asking again, say): not lost until the next tick.
      if (again && !stopped) pass();
    });
  };

  // A runtime that may have become placeable (the capacity projection announces its put) starts a
  // pass at once: with ticks only, a replacement runtime's capacity waited about half a tick for its
  // recovery item, when the scale-out's `fulfilled` had started the pass before the view showed it.
  const watch = await deps.view.watch?.(() => pass());
  let timer: ReturnType<typeof setInterval> | undefined;
  const ready = follower.caughtUp.then(() => {
    deps.log.info({ fromSeq, runs: deps.index.runs.size }, "run index caught up");
    if (stopped) return;
    caughtUp = true;
    deps.index.onChange(pass);
    timer = setInterval(pass, deps.tickMs ?? 250);
    pass();
  });
  return {
    ready,
    writeSnapshot: async () => writer?.flush(),
    nextPass: () =>
      new Promise<void>((ok) => {
        waiters.push(ok);
        pass();
      }),
    async stop() {
      stopped = true;
      clearInterval(timer);
      await follower.stop();
      await watch?.close();
      await writer?.stop();
      await children.stop();
      await running;
      await Promise.allSettled([...state.sends]);
      for (const w of waiters) w();
    },
  };
}
