import { randomUUID } from "node:crypto";
import { setImmediate as yieldToIo, setTimeout as sleep } from "node:timers/promises";
import {
  DagDefinition,
  HostIncarnation,
  LocalRunId,
  RuntimeInstanceId,
  SharedRunId,
  TenantId,
  type DroverEvent,
} from "../../../contracts/index.ts";
import { systemClock } from "../../../platform/clock.ts";
import { DEFAULT_LAYOUT } from "../../../streams/layout.ts";
import { encodeFor } from "../../../streams/store-context.ts";
import type { AggregateRef } from "../../../streams/subjects.ts";
import type { Appended, AppendOptions, EventStore } from "../../../streams/types.ts";
import { Execution } from "./execution.ts";
import { openFresh } from "./execution-open.ts";
import { runStep } from "./step-runners.ts";
import { WorkerPool } from "./worker-pool.ts";

/**
 * How many steps a pooled runtime runs while unbound (main.ts): about where a serial step's CPU stops
 * falling (in-process, a step of a 50-step chain: ~0.24 ms over the first 500, ~0.14 to 2 000, ~0.05
 * after 2 500; ~0.3–0.4 s of CPU in all, spent while the member waits anyway). A cold start does not
 * warm: before its listener it cost ~410 ms of CPU (its start's 35 → 448), overlapped with the start's
 * own waits it ran 10 steps at load 50 (docs/decisions.md).
 */
export const POOL_WARM_UP_STEPS = 3_000;
/**
 * How long a pooled runtime waits unbound before it warms: a refill member starts as the binds before
 * it reach capacity (the provisioner's busy-starts.ts), while those runtimes resume their runs on the
 * same cores; ~0.3–0.4 s of CPU then would compete with them. A member claimed sooner is bound cold.
 */
export const POOL_WARM_UP_AFTER_MS = 2_000;

/**
 * A warm-up run's share of a core (its CPU over its wall time) under which the member pauses: its
 * host's cores are wanted by other work. At P=20 (2 cores) the members' warm-ups took ~33 s of CPU
 * in a 74 s proof, most of it while replacements bound and resumed (docs/decisions.md).
 */
export const POOL_WARM_UP_MIN_SHARE = 0.75;
/** A contended warm-up's first pause and its longest (each pause in a row twice the one before). */
export const POOL_WARM_UP_PAUSE_MS = { first: 1_000, max: 16_000 } as const;

/**
 * The pause after one warm-up run (pure): none if the run got at least `POOL_WARM_UP_MIN_SHARE` of
 * a core, else twice the last pause (the first after a run that was not paused), at most the max.
 */
export function warmUpPause(cpuMs: number, wallMs: number, lastPauseMs: number): number {
  if (wallMs <= 0 || cpuMs >= POOL_WARM_UP_MIN_SHARE * wallMs) return 0;
  return Math.min(POOL_WARM_UP_PAUSE_MS.max, lastPauseMs > 0 ? 2 * lastPauseMs : POOL_WARM_UP_PAUSE_MS.first);
}

/** One warm-up run's cost: process CPU and wall time, ms. */
export interface WarmUpRun {
  readonly cpuMs: number;
  readonly wallMs: number;
}

/** Steps per warm-up run: as long as the runs it prepares for (W1's 50), so the run start and end stay a small share. */
const CHAIN = 50;
const dag = () =>
  DagDefinition.parse({
    steps: Array.from({ length: CHAIN }, (_, i) => ({
      id: `s${i + 1}`,
      kind: "compute",
      dependsOn: i ? [`s${i}`] : [],
    })),
  });

/**
 * A journal that keeps nothing: each append is encoded and validated exactly as the event store
 * encodes one (`encodeFor`: the event's schema, its subject, its tenant) and checked against the
 * aggregate's expected sequence, then dropped. No bytes leave the process.
 */
function sinkStore(): EventStore {
  const last = new Map<string, number>();
  let seq = 0;
  const append = async (ref: AggregateRef, event: DroverEvent, o: AppendOptions): Promise<Appended> => {
    encodeFor(DEFAULT_LAYOUT, ref, event);
    const key = `${ref.aggregate}.${ref.id}`;
    if ((last.get(key) ?? 0) !== o.expectedSeq) throw new Error(`warm-up journal: expected ${o.expectedSeq}`);
    last.set(key, ++seq);
    return { seq, duplicate: false };
  };
  const none = () => Promise.reject(new Error("the warm-up journal only appends"));
  return {
    append,
    appendAll: none,
    appendAtomic: none,
    read: none,
    lastSeq: none,
    lastOfType: none,
    replay: none,
  } as EventStore;
}

/**
 * Runs the step path — a fresh execution's open, the scheduler, a trivial compute step, its output's
 * digest, each event built, validated, encoded and conditionally journaled, the run's end — over a
 * journal of its own that keeps nothing, until `steps` steps ran or `stop()` says so (checked
 * before each run and between steps; it starts, and runs each step, only after yielding to I/O).
 * `between` is awaited after each whole run with that run's cost: the next run starts once it settles.
 * V8 optimises that code only after a few thousand steps (a serial step's CPU fell ~4× over its
 * first ~3 000 in a fresh process): a tenant's first runs otherwise pay for it. Touches no tenant, stream, connection or
 * store: its own ids, its own worker, nothing kept. Returns how many steps it ran.
 */
export async function warmUpSteps(
  steps: number,
  stop: () => boolean = () => false,
  between: (run: WarmUpRun) => Promise<void> = () => Promise.resolve(),
): Promise<number> {
  // Nothing before I/O already due: a pooled runtime's announcement (its listen's callback) goes first.
  await yieldToIo();
  const store = sinkStore();
  const env = {
    store,
    runtimeInstanceId: RuntimeInstanceId.parse("rt-warm-up"),
    hostIncarnation: HostIncarnation.parse(`pid:${process.pid}:0`),
    clock: systemClock,
    newEventId: randomUUID,
    sleep: async () => undefined,
  };
  let stopped = false;
  const halt = () => (stopped ||= stop());
  let current: Execution | undefined;
  const executor = {
    workers: new WorkerPool(1),
    maxWorkersPerRun: 1,
    // Each step first lets any waiting I/O in (a binding, a command): the warm-up never holds the loop.
    runStep: async (...a: Parameters<typeof runStep>) => {
      await yieldToIo();
      // Stopped: the run is cancelled (no retries, no backoff timers), its step dropped.
      if (halt()) current?.cancel();
      if (stopped) throw new Error("warm-up stopped");
      return runStep(...a);
    },
    clock: systemClock,
    log: () => undefined,
  };
  const definition = dag();
  let ran = 0;
  for (let r = 0; ran < steps && !halt(); r++) {
    const payload = {
      sharedRunId: SharedRunId.parse(`run-warm-up-${r}`),
      localRunId: LocalRunId.parse(`lr-warm-up-${r}`),
      tenantId: TenantId.parse("warm-up"),
      dag: definition,
      dispatchedSeq: 0,
      correlationId: "warm-up",
    };
    const cpu0 = process.cpuUsage();
    const wall0 = performance.now();
    current = new Execution(executor, await openFresh(env, payload), definition, systemClock.now().getTime());
    const outcome = await current.run();
    ran += current.completedSteps;
    if (outcome.state !== "completed") break;
    const cpu = process.cpuUsage(cpu0);
    await between({ cpuMs: (cpu.user + cpu.system) / 1000, wallMs: performance.now() - wall0 });
  }
  return ran;
}

/**
 * A pooled runtime's warm-up (main.ts): `warmUpSteps` until `bound()`, pausing after each run that got
 * less than `POOL_WARM_UP_MIN_SHARE` of a core (`warmUpPause`): a member is background work, and the
 * cores it would take are the ones a recovery's replacements need while the pool refills. Then one
 * JSON line on stdout, `{"event":"pool-warmed-up","steps":…,"cpuMs":…,"bound":…,"pauses":…,"pausedMs":…}`
 * (the provisioner ignores it; it tells what the member spent). Unbound, the process does nothing
 * else, so its CPU over the span is the warm-up's.
 */
export async function warmUpWhileUnbound(bound: () => boolean): Promise<void> {
  const cpu0 = process.cpuUsage();
  let pause = 0;
  let pauses = 0;
  let pausedMs = 0;
  const between = async (run: WarmUpRun): Promise<void> => {
    pause = warmUpPause(run.cpuMs, run.wallMs, pause);
    if (pause === 0 || bound()) return;
    pauses++;
    pausedMs += pause;
    // Not holding the process up: a bound runtime's own handles keep it alive, not this timer.
    await sleep(pause, undefined, { ref: false });
  };
  const steps = await warmUpSteps(POOL_WARM_UP_STEPS, bound, between);
  const cpu = process.cpuUsage(cpu0);
  const cpuMs = Math.round((cpu.user + cpu.system) / 1000);
  const line = { event: "pool-warmed-up", steps, cpuMs, bound: bound(), pauses, pausedMs };
  process.stdout.write(`${JSON.stringify(line)}\n`);
}
