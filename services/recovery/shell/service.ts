import type { JetStreamClient } from "@nats-io/jetstream";
import { staleHeartbeatMsOf } from "../../../contracts/index.ts";
import { follow, type Follower } from "../../../platform/follow.ts";
import type { RecoveryDeps } from "./deps.ts";
import { fence } from "./fence.ts";
import { detect } from "./health.ts";
import { reconcile } from "./reconcile.ts";
import { advanceTimeline } from "./timeline.ts";

export interface RecoveryService {
  readonly ready: Promise<void>;
  stop(): Promise<void>;
}

/**
 * Runs recovery: follows runs, runtimes, forensics, execution resume/completion facts and
 * heartbeats; on every change and tick: detect → fence (one kill at a time per runtime) →
 * reconcile fenced runtimes and runtimes retired by a planned stop (host-stopped, with its proof) →
 * advance forensics timelines. Three owners, never merged: health
 * decides, the host strategy proves the boundary, the reconciler moves work.
 */
export async function startRecovery(
  deps: RecoveryDeps & { js: JetStreamClient; tickMs?: number },
): Promise<RecoveryService> {
  const p = deps.layout.eventPrefix;
  const events: Follower = await follow(
    deps.js,
    {
      stream: deps.layout.eventStream,
      filters: [`${p}.run.>`, `${p}.runtime.>`, `${p}.forensics.>`, `${p}.exec.*.*.resumed`, `${p}.exec.*.*.completed`],
    },
    (m) => deps.state.apply(m),
  );
  const beats: Follower = await follow(
    deps.js,
    { stream: deps.layout.heartbeatStream, filters: [`${deps.layout.heartbeatPrefix}.>`], lastPerSubject: true },
    (m) => deps.state.applyBeat(m),
  );
  for (const f of [events, beats]) f.done.catch((e) => deps.log.fatal({ err: String(e) }, "recovery follower stopped"));
  const fencing = new Set<string>();
  let running = false,
    again = false,
    stopped = false,
    // No decision before both folds caught up: a half-replayed log shows runtimes as published whose
    // later retirement or heartbeats are not folded yet, and health would suspect them (issue 23).
    caughtUp = false;
  const staleMs = staleHeartbeatMsOf(deps.config);

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
        await detect(deps, deps.env.clock.now().getTime(), staleMs);
        for (const rt of deps.state.runtimes.values()) {
          if (
            rt.suspected &&
            !rt.fenced &&
            !fencing.has(rt.runtimeInstanceId) &&
            rt.registration?.controlPlaneId === deps.config.controlPlaneId
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
        for (const rt of deps.state.runtimes.values())
          if (
            (rt.fenced || (rt.stopped && rt.registration?.controlPlaneId === deps.config.controlPlaneId)) &&
            !rt.planned
          )
            await reconcile(deps, rt);
        for (const f of deps.state.forensics.values()) await advanceTimeline(deps, f);
      } while (again && !stopped);
    } catch (e) {
      deps.log.error({ err: String(e) }, "recovery pass failed; retried next tick");
    } finally {
      running = false;
    }
  };

  let timer: ReturnType<typeof setInterval> | undefined;
  const ready = Promise.all([events.caughtUp, beats.caughtUp]).then(() => {
    if (stopped) return;
    caughtUp = true;
    deps.state.onChange(() => void pass());
    timer = setInterval(() => void pass(), deps.tickMs ?? 200);
    void pass();
  });
  return {
    ready,
    async stop() {
      stopped = true;
      clearInterval(timer);
      await Promise.all([events.stop(), beats.stop()]);
    },
  };
}
