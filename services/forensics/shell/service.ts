import type { Db } from "mongodb";
import {
  type CheckpointStore,
  createProjectionRunner,
  type NatsHandle,
  type ProjectionRunner,
  type Skip,
  type StreamLayout,
} from "../../../streams/index.ts";
import { beginBuild, buildState, endBuild, isBuilt, mongoCheckpointStore } from "./checkpoint-store.ts";
import { ensureIndexes, readModelDb, type ReadModelDb } from "./collections.ts";
import { forensicsProjection, PROJECTION_NAME } from "./projection.ts";

/**
 * How long caught-up events may wait for more before the read models are written
 * (streams/projection-runner.ts `lingerMs`). 200, not 50: a W2 run's events (10 steps in about half
 * a second) then reach FerretDB in fewer windows, so its run and execution documents are rewritten
 * less often (FerretDB CPU per 1,000 W2 steps ~315 -> ~215 ms over five paired runs, and W2
 * throughput up in each pair); the read models trail a quiet stream by up to 200 ms.
 */
export const FORENSICS_LINGER_MS = 200;

/**
 * How long a busy stream's events may be held at most (streams/projection-runner.ts `maxLingerMs`):
 * while events keep coming (W1's steps, W2's 50 runs), a window is held on past `FORENSICS_LINGER_MS`
 * up to this long, so a run's events reach FerretDB in fewer windows and its documents are rewritten
 * less often; a quiet stream's event still waits 200 ms only. The read models trail a busy stream by up
 * to this long (plus the write).
 */
export const FORENSICS_MAX_LINGER_MS = 600;

/**
 * Live, most events applied in one batch (streams/projection-runner.ts `liveBatchSize`; catch-up and
 * rebuild keep the default 256). Under load (W2: 50 concurrent runs) a linger window holds more than
 * 256 events, and a cap of 256 split it into several flushes, each rewriting the same run documents
 * (a versioned upsert costs FerretDB ~8x an inserted row): at 1,024, run-document updates over W1 +
 * W2 (235 runs) fell from ~400 to ~220 and FerretDB's CPU per 1,000 W2 steps by about a quarter
 * (paired runs, bench/results `w2_cpu_per_1000_steps`); 4,096 measured no better. Lag stays
 * bounded: a batch is written when full or when its linger window ends.
 */
export const FORENSICS_LIVE_BATCH_SIZE = 1024;

export interface ForensicsOptions {
  readonly handle: NatsHandle;
  readonly layout: StreamLayout;
  readonly db: Db;
  /** How often to check that the database still holds a complete build (0 = never); a dropped database is rebuilt. */
  readonly watchdogMs?: number;
  readonly log?: { info(o: object, msg: string): void; error(o: object, msg: string): void };
  /** Called when the live projection stops on an error (the NATS consumer failed); poison never stops it. */
  readonly onFatal?: (e: unknown) => void;
  /** Where an event the projection steps over (undecodable, or refused by the fold) is recorded. */
  readonly onSkip?: (s: Skip) => void;
  /**
   * Whether this process may still write the read models (the single-writer lease is held; default:
   * always). Once false, every write is refused: applies throw, checkpoints and build markers are not written.
   */
  readonly writable?: () => boolean;
}

export interface ForensicsService {
  readonly db: ReadModelDb;
  /** Stream sequence applied up to. */
  readonly position: number;
  /** Drops the read models and replays the stream from sequence 1, then follows it live again; returns the position. */
  rebuild(): Promise<number>;
  /** Resolves once the read models include stream sequence `seq`. */
  waitFor(seq: number, timeoutMs?: number): Promise<void>;
  stop(): Promise<void>;
}

/**
 * Starts the forensics projector: ensures the indexes; rebuilds from sequence 1 if this database
 * holds no build (fresh or dropped); goes on from the checkpoint with a build a stop or a crash
 * interrupted (its marker still says `building` with its token, so a drop since would show); and
 * catches up from the checkpoint with a complete build; then follows the stream live. Rebuilds are serialised: the live runner is
 * stopped first so two runners never write the same database.
 * Failure modes: MongoDB or NATS unreachable at start rejects; while live, a retryable error is
 * retried on the same event; a poison event is recorded through `onSkip` and stepped over.
 */
export async function startForensics(o: ForensicsOptions): Promise<ForensicsService> {
  const m = readModelDb(o.db);
  let stopped = false;
  const writable = o.writable ?? (() => true);
  const projection = forensicsProjection(
    m,
    o.layout,
    (e, seq) => o.log?.error({ err: String(e), seq }, "forensics projection cannot apply an event; retrying it"),
    writable,
  );
  const checkpoints = guardedCheckpoints(mongoCheckpointStore(m), writable);
  const mustWrite = () => {
    if (stopped || !writable()) throw new Error("forensics writer stopped: not writing the read models");
  };
  let runner: ProjectionRunner;
  let busy: Promise<unknown> = Promise.resolve();

  const newRunner = () =>
    (runner = createProjectionRunner(o.handle, o.layout, projection, checkpoints, {
      checkpointEvery: 16,
      liveBatchSize: FORENSICS_LIVE_BATCH_SIZE,
      // Caught up, events wait up to 50 ms for more before FerretDB is written: a run's steps arrive
      // a millisecond apart, and each write (one commit per collection, plus the checkpoint) cost
      // FerretDB more CPU than the runtime spent executing the step (bench/workloads W1).
      lingerMs: FORENSICS_LINGER_MS,
      maxLingerMs: FORENSICS_MAX_LINGER_MS,
      ...(o.onSkip ? { onSkip: o.onSkip } : {}),
      onRestart: (e, delayMs) =>
        o.log?.info({ err: String(e), delayMs }, "forensics live read failed: following again from the position"),
    }));

  /** `rebuild`: from sequence 1; `resume`: an interrupted build, on from its checkpoint; `follow`: a complete build. */
  const follow = async (mode: "rebuild" | { resume: string } | "follow"): Promise<number> => {
    mustWrite();
    newRunner();
    let position: number;
    if (mode === "follow") position = await runner.catchUp();
    else {
      let token = typeof mode === "object" ? mode.resume : undefined;
      for (;;) {
        mustWrite();
        if (!token) {
          // Checkpoint 0, then the drop, then the "building" marker: a writer stopped anywhere in
          // between (a SIGKILL, a lost lease) leaves either the previous marker over a checkpoint of
          // 0 (built: followed from sequence 1; none: rebuilt) or a marker over emptied collections,
          // so the next writer's build is whole. (The marker first, then a stop before the drop, left
          // it over what a live writer had put into a dropped database — a checkpoint near the end
          // over only the newest rows — and the next holder resumed there: rows missing for good,
          // seen in the chaos proof.)
          await checkpoints.save(PROJECTION_NAME, 0);
          await projection.reset!();
          token = await beginBuild(m, PROJECTION_NAME);
          newRunner();
        }
        position = await runner.catchUp();
        mustWrite();
        if (await endBuild(m, PROJECTION_NAME, token)) break;
        token = undefined;
        o.log?.info({ position }, "forensics read models dropped during the build: rebuilding from sequence 1");
      }
    }
    const current = runner;
    await current.start();
    current.done.catch((e: unknown) => {
      if (!stopped && current === runner) {
        o.log?.error({ err: String(e) }, "forensics projection stopped");
        o.onFatal?.(e);
      }
    });
    return position;
  };
  const serial = <T>(fn: () => Promise<T>): Promise<T> => {
    const next = busy.then(fn, fn);
    busy = next.catch(() => undefined);
    return next;
  };
  const rebuild = () =>
    serial(async () => {
      await runner.stop();
      const position = await follow("rebuild");
      o.log?.info({ position }, "forensics read models rebuilt from sequence 1");
      return position;
    });

  await ensureIndexes(m);
  const build = await buildState(m, PROJECTION_NAME);
  const mode = build.state === "built" ? "follow" : build.state === "building" ? { resume: build.token } : "rebuild";
  const position = await serial(() => follow(mode));
  o.log?.info(
    {
      position,
      build: build.state === "built" ? "complete" : build.state === "building" ? "resumed" : "from sequence 1",
    },
    "forensics projection following the stream",
  );

  // A dropped database loses the marker; the checkpoint alone would come back at a high sequence.
  const watchdog = o.watchdogMs
    ? setInterval(() => {
        void serial(async () => {
          if (stopped || (await isBuilt(m, PROJECTION_NAME))) return;
          o.log?.info({}, "forensics read models missing: rebuilding");
          await runner.stop();
          await follow("rebuild");
        }).catch((e: unknown) => o.log?.error({ err: String(e) }, "forensics watchdog rebuild failed"));
      }, o.watchdogMs)
    : undefined;
  watchdog?.unref();

  return {
    db: m,
    get position() {
      return runner.position;
    },
    rebuild,
    waitFor: (seq, timeoutMs) => runner.waitFor(seq, timeoutMs),
    async stop() {
      stopped = true;
      if (watchdog) clearInterval(watchdog);
      // The running runner first: a rebuild in progress then ends at its next refused write
      // instead of replaying to the end of the stream.
      await runner.stop();
      await busy;
      await runner.stop();
    },
  };
}

/** A checkpoint store whose saves are dropped once the process may no longer write. */
function guardedCheckpoints(store: CheckpointStore, writable: () => boolean): CheckpointStore {
  return {
    load: (projection) => store.load(projection),
    save: async (projection, seq) => {
      if (writable()) await store.save(projection, seq);
    },
  };
}
