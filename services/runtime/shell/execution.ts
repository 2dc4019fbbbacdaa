import {
  type DagDefinition,
  type ErrorCode,
  type ExecutionId,
  type Step,
  type StepId,
} from "../../../contracts/index.ts";
import { assertNever } from "../../../contracts/assert-never.ts";
import { scheduleSteps, takesWorker, type StepStart } from "../../../aggregates/scheduler.ts";
import { pipelinedStarts } from "../../../aggregates/pipelined-starts.ts";
import { canonicalJson } from "../../../aggregates/step-inputs.ts";
import { attemptOutcome } from "./attempt.ts";
import type { OpenedExecution } from "./execution-open.ts";
import { recordableOutput, recordedOutput } from "./step-output.ts";
import { needsOutputs, sha256Hex } from "./step-runners.ts";
import type { ExecutorEnv } from "./executor-env.ts";
import { storeFailureOf } from "./store-failure.ts";
import {
  appendRun,
  failRun,
  finishFromJournal,
  runCompleted,
  failUnexpectedly,
  runOutput,
  stepFailureReason,
  type EndCtx,
} from "./execution-end.ts";
import { settleControlFlow, type ControlFlowHost } from "./control-flow.ts";
import { durableTimer, firstStepStarted, progressFrom, stepFailed, type LocalProgress } from "./execution-progress.ts";
import { itemValue, settleMaps, type MapHost } from "./map-steps.ts";
import { itemStep } from "../../../aggregates/map.ts";
import { MAP_LIMITS, parseMapItemId } from "../../../contracts/index.ts";
import { cachedStep, cacheHostOf, indexCompletion, type CacheHost } from "./step-cache.ts";
import { childHostOf, withChildRuns, type ChildRunHost } from "./child-runs.ts";
import { runWait, waitHostOf, type WaitHost } from "./wait-steps.ts";
import { parked, type RunSlot } from "./run-slot.ts";
import { Wake } from "./wake.ts";

export type { ExecutorEnv } from "./executor-env.ts";

export type ExecutionOutcome =
  | { readonly state: "completed" | "cancelled" }
  | { readonly state: "failed"; readonly reason: ErrorCode; readonly detail: string };

/**
 * Drives one opened execution to its end: asks the pure scheduler which steps to start, runs them on
 * the shared workers (at most maxWorkersPerRun at a time), and makes each outcome durable before a
 * dependent may start, except a pure dependent (pipelined-starts.ts), whose own outcome is journaled
 * after it or not at all. Completed steps from the journal are never re-run; their recorded outputs feed
 * their dependents. Stops at once, writing nothing more, when an append is rejected
 * (`execution-ownership-lost`): the in-flight steps are aborted and their results dropped. `cancel()`
 * aborts the steps and ends the execution `cancelled` (admission then cancels its child runs).
 */
export class Execution {
  /** Output values read so far (completed here, or read back from the journal/object store on demand). */
  private readonly values = new Map<string, unknown>();
  private readonly deadlineAt: number | undefined;
  private deadlineTimer: ReturnType<typeof setTimeout> | undefined;
  private readonly running = new Set<string>();
  /** Running steps whose attempt succeeded and whose `step-completed` append is in flight. */
  private readonly appending = new Set<string>();
  /** Running wait steps that only listen for their signal (nothing to do until it comes). */
  private readonly listening = new Set<string>();
  /** Each running wait's own abort: a superseded wait is stopped alone (docs/control-flow.md "Waits"). */
  private readonly waitAborts = new Map<string, AbortController>();
  private readonly abort = new AbortController();
  private fatal: unknown;
  private cancelRequested = false;
  private readonly wake: Wake;
  private firstStepLogged = false;
  private readonly p: LocalProgress;
  private readonly control: ControlFlowHost;
  private readonly mapHost: MapHost;
  private readonly waitHost: WaitHost;
  private readonly end: EndCtx;
  private readonly cacheHost: CacheHost | undefined;
  private readonly child: ChildRunHost | undefined;
  private readonly stepsById: ReadonlyMap<string, Step>;

  constructor(
    private readonly env: ExecutorEnv,
    private readonly opened: OpenedExecution,
    private readonly dag: DagDefinition,
    private readonly startedAt: number,
    private readonly input: unknown = undefined,
    private readonly slot?: RunSlot,
  ) {
    this.p = progressFrom(opened.prior);
    this.stepsById = new Map(dag.steps.map((s) => [s.id as string, s]));
    this.wake = new Wake(env.clock);
    this.child = childHostOf(env.childRuns, opened);
    // The deadline counts from the journal's exec.started, so a resumed execution keeps it.
    if (dag.deadlineMs !== undefined) {
      const from = opened.prior.startedAt ? Date.parse(opened.prior.startedAt) : env.clock.now().getTime();
      this.deadlineAt = from + dag.deadlineMs;
    }
    this.control = {
      opened,
      input,
      skipped: this.p.skippedIds,
      conditions: this.p.conditions,
      failures: this.p.failures,
      lastErrors: this.p.lastErrors,
      stepOf: (id) => this.stepOf(id),
      valueOf: (id) => this.valueOf(id),
      release: (id) => this.release(id),
    };
    this.mapHost = {
      opened,
      input,
      maxItems: env.mapMaxItems ?? MAP_LIMITS.maxItemsDefault,
      ...(env.outputs ? { outputs: env.outputs } : {}),
      ...(env.secrets ? { secrets: env.secrets } : {}),
      maps: this.p.maps,
      failures: this.p.failures,
      lastErrors: this.p.lastErrors,
      stepOf: (id) => this.stepOf(id),
      valueOf: (id) => this.valueOf(id),
      completedNow: (id, value, digest) => this.completedNow(id, value, digest),
    };
    this.cacheHost = cacheHostOf(env, opened);
    this.waitHost = waitHostOf(opened, env.clock, env.signals, {
      listening: (id) => {
        this.listening.add(id);
        this.wake.poke();
      },
      resolving: (id) => this.listening.delete(id),
    });
    this.end = {
      opened,
      dag,
      log: env.log,
      valueOf: (id) => this.valueOf(id),
      ...(env.outputs ? { outputs: env.outputs } : {}),
    };
  }

  get executionId(): ExecutionId {
    return this.opened.executionId;
  }
  get completedSteps(): number {
    return this.p.completedIds.size;
  }

  /** Requests cancellation; the execution ends `cancelled` once its in-flight steps have stopped. */
  cancel(): void {
    this.cancelRequested = true;
    this.abort.abort(new Error("cancelled"));
    this.wake.poke();
  }

  /** Runs to completion, failure, cancellation or lost ownership; never rejects. */
  async run(): Promise<ExecutionOutcome> {
    if (this.deadlineAt !== undefined)
      this.deadlineTimer = setTimeout(
        () => this.wake.poke(),
        Math.max(0, this.deadlineAt - this.env.clock.now().getTime()),
      );
    try {
      return this.opened.ended ? await finishFromJournal(this.end, this.opened.ended) : await this.loop();
    } catch (e) {
      this.abort.abort(e);
      await this.drained();
      const err = storeFailureOf(e);
      if (err.code === "execution-ownership-lost") {
        this.env.log({
          event: "execution-ownership-lost",
          executionId: this.executionId,
          detail: err.message,
          completedSteps: this.p.completedIds.size,
        });
        return { state: "failed", reason: err.code, detail: err.message };
      }
      return failUnexpectedly(this.end, err);
    } finally {
      if (this.deadlineTimer) clearTimeout(this.deadlineTimer);
    }
  }

  private async loop(): Promise<ExecutionOutcome> {
    for (;;) {
      if (this.fatal) throw this.fatal;
      if (this.cancelRequested) return this.finishCancelled();
      if (this.deadlineAt !== undefined && this.env.clock.now().getTime() >= this.deadlineAt)
        return this.finishDeadline();
      const progress = {
        completed: this.p.completedIds,
        failures: this.p.failures,
        running: this.running,
        skipped: this.p.skippedIds,
        conditions: this.p.conditions,
        maps: this.p.maps,
      };
      const now = this.env.clock.now().getTime();
      const d = scheduleSteps(this.dag, progress, now, this.env.maxWorkersPerRun);
      switch (d.kind) {
        case "completed":
          return this.finishCompleted();
        case "failed":
          return this.finishFailed(d.stepId, d.attempt);
        case "continue": {
          // Skips and conditions are journaled first; the scheduler then decides again over them.
          if ((await settleControlFlow(d, this.control)) || (await settleMaps(d, this.mapHost))) break;
          // Nothing to start on durable progress: pure steps may go while completions are appended.
          const start =
            d.start.length > 0
              ? d.start
              : pipelinedStarts(this.dag, progress, this.appending, now, this.env.maxWorkersPerRun, (id) =>
                  this.stepOf(id),
                );
          for (const s of start) {
            // A sleep, wait or run step only waits (timer, signal, child run): it takes no worker meanwhile.
            const needsWorker = takesWorker(this.stepOf(s.stepId));
            const acquired =
              needsWorker &&
              (await this.env.workers.acquire(this.abort.signal).then(
                () => true,
                () => false,
              ));
            if (this.abort.signal.aborted) {
              if (acquired) this.env.workers.release();
              break;
            }
            void this.execute(s, acquired);
          }
          if (start.length === 0) await this.idle(d.wakeAt);
          break;
        }
        default:
          assertNever(d);
      }
    }
  }

  /** A DAG step, or for an item id (`<map>--<index>`) the step its map runs on the item. */
  private stepOf(stepId: string): Step {
    const own = this.stepsById.get(stepId);
    if (own) return own;
    const item = parseMapItemId(stepId, (id) => this.p.maps.has(id));
    return itemStep(this.stepOf(item!.stepId), stepId);
  }

  private completedNow(stepId: string, value: unknown, outputDigest: string): void {
    this.p.failures.delete(stepId);
    this.p.completed.set(stepId, outputDigest);
    this.values.set(stepId, value);
    this.p.completedIds.add(stepId);
  }

  /**
   * One attempt of one step, on a worker the loop acquired (`holdsWorker`) or, for a sleep, none,
   * given back when the attempt ends; records its outcome durably. While its `step-completed` is
   * appended its output is known (`appending`): pure dependents may start (pipelined-starts.ts).
   */
  private async execute(s: StepStart, holdsWorker: boolean): Promise<void> {
    let holding = holdsWorker;
    const step = this.stepOf(s.stepId);
    this.running.add(s.stepId);
    if (!this.firstStepLogged) this.firstStepLogged = firstStepStarted(this.env, this.opened, s, this.startedAt);
    const t0 = this.env.clock.now().getTime();
    try {
      const data = async () => ({
        input: this.input ?? null,
        outputs: await this.depValues(step),
        ...(await itemValue(step.id, this.mapHost)),
      });
      const { key: cacheKey, hit } = await cachedStep(step, data, this.cacheHost, this.abort.signal);
      if (hit) return this.completedNow(s.stepId, hit.value, hit.outputDigest);
      const wakeAt =
        step.kind === "sleep"
          ? await durableTimer(this.opened, this.p.timers, this.env.clock, step.id, s.attempt, step.params.durationMs)
          : undefined;
      const own = step.kind === "wait" ? new AbortController() : undefined;
      if (own) this.waitAborts.set(s.stepId, own);
      const parent = own ? AbortSignal.any([this.abort.signal, own.signal]) : this.abort.signal;
      const outcome = await attemptOutcome(step, parent, async (own) => {
        const prefix = `${this.opened.tenantId}/${this.executionId}/${step.id}`;
        if (step.kind === "wait")
          return recordableOutput(await runWait(this.waitHost, step, own.signal), prefix, this.env.outputs, undefined);
        const raw = await withChildRuns(this.child, this.env.runStep)(step, {
          executionId: this.executionId,
          attempt: s.attempt,
          depDigests: this.p.completed,
          get signal() {
            return own.signal;
          },
          llmBaseUrl: this.env.llmBaseUrl,
          ...(this.env.egressFor ? { egress: this.env.egressFor(this.opened.tenantId) } : {}),
          ...(wakeAt === undefined ? {} : { sleepMs: Math.max(0, wakeAt - this.env.clock.now().getTime()) }),
          ...(needsOutputs(step) ? { data: await data() } : {}),
          ...(this.env.secrets ? { secrets: this.env.secrets } : {}),
          ...(this.env.worker ? { worker: this.env.worker } : {}),
          log: this.env.log,
        });
        return recordableOutput(raw, prefix, this.env.outputs, this.env.secrets);
      });
      // After cancel or lost ownership nothing more is written: the step's result is dropped. A
      // superseded wait writes nothing either, unless it resolved first (then it completes).
      if (this.abort.signal.aborted || (own?.signal.aborted && !outcome.ok)) return;
      if (holding) this.env.workers.release();
      holding = false;
      const now = this.env.clock.now();
      if (outcome.ok) {
        const { value, outputDigest, output, outputRef } = outcome.output;
        const completed = this.opened.emit("exec.step-completed", {
          stepId: s.stepId,
          attempt: s.attempt,
          ...(outputRef ? { outputRef } : { output }),
          outputDigest,
          durationMs: Math.max(0, now.getTime() - t0),
          ...(cacheKey ? { cacheKey } : {}),
        });
        const durable = this.opened.exec.append(completed);
        // Known, not yet durable: only what depends on the journal's order may read it (dependents' inputs).
        this.p.completed.set(s.stepId, outputDigest);
        this.values.set(s.stepId, value);
        this.appending.add(s.stepId);
        this.wake.poke();
        await durable;
        this.completedNow(s.stepId, value, outputDigest);
        if (cacheKey) await indexCompletion(cacheKey, completed, this.cacheHost);
      } else await stepFailed(this.opened, this.p, step, s.attempt, outcome, now.getTime(), this.env.secrets);
    } catch (e) {
      this.fatal ??= e;
      this.abort.abort(e);
    } finally {
      this.waitAborts.delete(s.stepId);
      this.appending.delete(s.stepId);
      this.running.delete(s.stepId);
      if (holding) this.env.workers.release();
      this.wake.poke();
    }
  }

  /** Stops the running wait `stepId` (if any) and waits for it; true when it is still unsettled. */
  private async release(stepId: string): Promise<boolean> {
    this.waitAborts.get(stepId)?.abort(new Error(`wait ${stepId} superseded`));
    while (this.running.has(stepId)) await this.wake.changed();
    const failed = this.p.failures.get(stepId);
    return !this.p.completedIds.has(stepId) && !(failed && failed.retryAt === undefined);
  }

  private async finishCompleted(): Promise<ExecutionOutcome> {
    const outputDigest = sha256Hex(canonicalJson([...this.p.completed.entries()].sort(([a], [b]) => (a < b ? -1 : 1))));
    const result = await runOutput(this.end);
    await this.opened.exec.append(this.opened.emit("exec.completed", { outputDigest }));
    return runCompleted(this.end, outputDigest, result);
  }

  /** A completed step's output value: from memory, or read back from the journal (object store when stored). */
  private async valueOf(stepId: string): Promise<unknown> {
    if (this.values.has(stepId)) return this.values.get(stepId);
    const c = this.opened.prior.completed.get(stepId);
    const v = c ? await recordedOutput(c, this.env.outputs) : null;
    this.values.set(stepId, v);
    return v;
  }

  private async depValues(step: Step): Promise<ReadonlyMap<string, unknown>> {
    return new Map(await Promise.all(step.dependsOn.map(async (d) => [d as string, await this.valueOf(d)] as const)));
  }

  private async finishDeadline(): Promise<ExecutionOutcome> {
    this.abort.abort(new Error("run deadline exceeded"));
    await this.drained();
    const detail = `the execution ran longer than its deadline of ${this.dag.deadlineMs} ms`;
    return failRun(this.end, { code: "run-deadline-exceeded", detail });
  }

  private async finishFailed(stepId: StepId, attempt: number): Promise<ExecutionOutcome> {
    this.abort.abort(new Error("execution failed"));
    await this.drained();
    return failRun(this.end, stepFailureReason(stepId, attempt, this.p.lastErrors.get(stepId)), stepId);
  }

  private async finishCancelled(): Promise<ExecutionOutcome> {
    await this.drained();
    if (this.fatal) throw this.fatal;
    await this.opened.exec.append(this.opened.emit("exec.cancelled", { reason: "CancelRun" }));
    await appendRun(this.end, "run.cancelled", { reason: "CancelRun" });
    return { state: "cancelled" };
  }

  /** Waits for a change; parked (its run slot given back) while every running step is a wait listening. */
  private async idle(wakeAt?: number): Promise<void> {
    const parks = this.running.size > 0 && [...this.running].every((id) => this.listening.has(id));
    // A change not yet looked at (e.g. the wait that just started listening) first: never park with news.
    if (!this.slot || !parks || this.wake.pending) return this.wake.changed(wakeAt);
    const ctx = { executionId: this.executionId, waits: [...this.listening], clock: this.env.clock, log: this.env.log };
    const goesOn = () => !(this.cancelRequested || this.fatal || this.abort.signal.aborted);
    await parked(this.slot, ctx, () => this.wake.changed(wakeAt), goesOn, this.abort.signal);
  }

  private async drained(): Promise<void> {
    while (this.running.size > 0) await this.wake.changed();
  }
}
