import type { JetStreamClient } from "@nats-io/jetstream";
import { follow, type Follower } from "../../../platform/follow.ts";
import { FairShare } from "../domain/fair-queue.ts";
import { FlowKeys } from "./flow-gate.ts";
import { startChildRuns } from "./child-runs.ts";
import type { AdmissionDeps } from "./deps.ts";
import { admissionPass, type AdmissionState } from "./placer.ts";

export interface AdmissionService {
  /** Resolves once the run index has caught up with the stream (before that, no decision is taken). */
  readonly ready: Promise<void>;
  /** Resolves after the next full pass completes (its runtime commands may still be in flight). */
  nextPass(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * Runs admission: follows run and scale-out events into the index, and runs an admission pass
 * whenever the index changes and on every tick (capacity changes arrive through the Redis view).
 * Passes never overlap within a replica; other replicas are kept honest by conditional appends.
 */
export async function startAdmission(
  deps: AdmissionDeps & { js: JetStreamClient; tickMs?: number },
): Promise<AdmissionService> {
  const prefix = deps.layout.eventPrefix;
  const follower: Follower = await follow(
    deps.js,
    { stream: deps.layout.eventStream, filters: [`${prefix}.run.>`, `${prefix}.scaleout.>`] },
    (m) => deps.index.apply(m),
  );
  follower.done.catch((e) => deps.log.fatal({ err: String(e) }, "run follower stopped"));
  // Run steps' child runs: submitted and cancelled here, never by a runtime (docs/control-flow.md).
  const children = await startChildRuns(deps);
  children.done.catch((e) => deps.log.fatal({ err: String(e) }, "child-run follower stopped"));
  const state: AdmissionState = {
    busy: new Set(),
    resuming: new Map(),
    fair: new FairShare(),
    flow: new FlowKeys(),
    sends: new Set(),
    onSendDone: () => pass(),
  };
  let running: Promise<void> | undefined;
  let again = false;
  let stopped = false;
  // No decision before the index has caught up with the log: a pass on a half-folded index would
  // count fewer scale-out generations than the log holds and collide with ended requests (issue 23).
  let caughtUp = false;
  let waiters: (() => void)[] = [];

  const pass = (): void => {
    if (stopped || !caughtUp) return;
    if (running) {
      again = true;
      return;
    }
    running = (async () => {
      do {
        again = false;
        const done = waiters;
        waiters = [];
        await admissionPass(deps, state).catch((e) => deps.log.error({ err: String(e) }, "admission pass failed"));
        for (const w of done) w();
      } while (again && !stopped);
    })().finally(() => {
      running = undefined;
    });
  };

  let timer: ReturnType<typeof setInterval> | undefined;
  const ready = follower.caughtUp.then(() => {
    if (stopped) return;
    caughtUp = true;
    deps.index.onChange(pass);
    timer = setInterval(pass, deps.tickMs ?? 250);
    pass();
  });
  return {
    ready,
    nextPass: () =>
      new Promise<void>((ok) => {
        waiters.push(ok);
        pass();
      }),
    async stop() {
      stopped = true;
      clearInterval(timer);
      await follower.stop();
      await children.stop();
      await running;
      await Promise.allSettled([...state.sends]);
      for (const w of waiters) w();
    },
  };
}
