import type { JetStreamClient } from "@nats-io/jetstream";
import type { Logger } from "pino";
import { RUN_END_EVENTS } from "../../../aggregates/run.ts";
import { planSchedule } from "../../../aggregates/schedule-plan.ts";
import type { Clock } from "../../../platform/clock.ts";
import { follow, type Follower } from "../../../platform/follow.ts";
import { eventTypeFilter } from "../../../streams/index.ts";
import { act, type ActDeps } from "./act.ts";
import { ScheduleBook } from "./book.ts";

export interface SchedulerDeps extends ActDeps {
  readonly js: JetStreamClient;
  readonly clock: Clock;
  readonly log: Logger;
  /** How often every schedule is looked at (default 100 ms): a fire starts at most this late. */
  readonly tickMs?: number;
}

export interface SchedulerService {
  readonly ready: Promise<void>;
  readonly book: ScheduleBook;
  stop(): Promise<void>;
}

/**
 * The scheduler: folds every schedule and the end of every run its fires started (sent only the run
 * events that decide an end, aggregates/run.ts RUN_END_EVENTS), and on each
 * tick carries out each schedule's next step (docs/schedules.md). Any number of replicas may run:
 * every step is a conditional append on the schedule, so of two replicas deciding the same fire
 * one appends and the other conflicts and waits for its fold to show what happened.
 */
export async function startScheduler(deps: SchedulerDeps): Promise<SchedulerService> {
  const p = deps.layout.eventPrefix;
  const book = new ScheduleBook((subject, seq, error) => deps.log.warn({ subject, seq, error }, "invalid event"));
  // Of a run, only the events that decide when it ends (RUN_END_EVENTS): the book forgets a fired run
  // at its end, and every other run event (most of the log: every step of every API run's life) would
  // be delivered here only to be dropped by its subject.
  const follower: Follower = await follow(
    deps.js,
    {
      stream: deps.layout.eventStream,
      filters: [`${p}.schedule.>`, ...RUN_END_EVENTS.map((t) => eventTypeFilter(deps.layout, t))],
    },
    (m) => book.apply(m),
  );
  follower.done.catch((e) => deps.log.fatal({ err: String(e) }, "scheduler follower stopped"));
  // After an append or a conflict, a schedule waits until its fold moves past what it acted on.
  const waitPast = new Map<string, number>();
  let stopped = false;
  let passing: Promise<void> = Promise.resolve();
  const pass = async () => {
    for (const [key, e] of book.entries) {
      if (stopped) return;
      if ((waitPast.get(key) ?? -1) >= e.state.lastSeq) continue;
      waitPast.delete(key);
      const step = planSchedule(e.state, deps.clock.now().getTime(), [...e.open]);
      if (step.kind === "idle" || step.kind === "wait" || step.kind === "wait-for-run") continue;
      // The fold may move while the append is in flight (it often sees our own event first).
      const actedOn = e.state.lastSeq;
      try {
        const r = await act(deps, e, step);
        if (r !== undefined) waitPast.set(key, actedOn);
        if (r && "appended" in r) deps.log.info({ schedule: key, step: step.kind, seq: r.appended }, "schedule acted");
      } catch (err) {
        deps.log.warn({ schedule: key, err: String(err) }, "schedule step failed; retried next tick");
      }
    }
  };
  // No decision before the fold caught up: a half-replayed schedule would conflict on every step.
  const ready = follower.caughtUp.then(() => deps.log.info({ schedules: book.entries.size }, "scheduler caught up"));
  await ready;
  let busy = false;
  const timer = setInterval(() => {
    if (busy || stopped) return; // a slow pass is not queued behind by ticks
    busy = true;
    passing = pass().finally(() => (busy = false));
  }, deps.tickMs ?? 100);
  return {
    ready,
    book,
    async stop() {
      stopped = true;
      clearInterval(timer);
      await passing;
      await follower.stop();
    },
  };
}
