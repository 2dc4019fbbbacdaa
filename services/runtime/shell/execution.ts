import {
  DroverError,
  isDroverError,
  type DagDefinition,
  type DataOf,
  type ErrorCode,
  type Step,
} from "../../../contracts/index.ts";
import { assertNever } from "../../../aggregates/assert-never.ts";
import { retryAtAfterFailure, scheduleSteps, type StepStart } from "../../../aggregates/scheduler.ts";
import { canonicalJson } from "../../../aggregates/step-inputs.ts";
import { RUN_REQUESTS } from "../../../aggregates/run.ts";
import type { OpenedExecution } from "./execution-open.ts";
import { sha256Hex, type StepRunner } from "./step-runners.ts";
import type { WorkerPool } from "./worker-pool.ts";

export interface ExecutorEnv {
  readonly workers: WorkerPool;
  readonly maxWorkersPerRun: number;
  readonly runStep: StepRunner;
  readonly llmBaseUrl?: string;
  readonly now: () => Date;
  readonly log: (fields: Record<string, unknown>) => void;
}

export type ExecutionOutcome =
  | { readonly state: "completed" | "cancelled" }
  | { readonly state: "failed"; readonly reason: ErrorCode; readonly detail: string };

/**
 * Drives one opened execution to its end: asks the pure scheduler which steps to start, runs them on
 * the shared workers (at most maxWorkersPerRun at a time), and makes each outcome durable before a
 * dependent may start. Completed steps from the journal are never re-run; their recorded outputs feed
 * their dependents.
 *
 * Stops at once, writing nothing more, when an append is rejected (`execution-ownership-lost`): the
 * in-flight steps are aborted and their results dropped. `cancel()` aborts the steps and ends the
 * execution with exec/run `cancelled`.
 */
export class Execution {
  private readonly completed = new Map<string, string>(); // stepId → output digest
  private readonly completedIds = new Set<string>();
  private readonly failures = new Map<string, { attempt: number; retryAt?: number }>();
  private readonly timers = new Map<string, { attempt: number; wakeAt: number }>();
  private readonly running = new Set<string>();
  private readonly abort = new AbortController();
  private fatal: unknown;
  private cancelRequested = false;
  private dirty = false;
  private wake: (() => void) | undefined;
  private firstStepLogged = false;

  constructor(
    private readonly env: ExecutorEnv,
    private readonly opened: OpenedExecution,
    private readonly dag: DagDefinition,
    private readonly startedAt: number,
  ) {
    for (const [id, c] of opened.prior.completed) {
      this.completed.set(id, c.outputDigest);
      this.completedIds.add(id);
    }
    for (const [id, f] of opened.prior.failures) this.failures.set(id, f);
    for (const [id, t] of opened.prior.timers) this.timers.set(id, t);
  }

  get executionId(): string {
    return this.opened.executionId;
  }
  get completedSteps(): number {
    return this.completed.size;
  }

  /** Requests cancellation; the execution ends `cancelled` once its in-flight steps have stopped. */
  cancel(): void {
    this.cancelRequested = true;
    this.abort.abort(new Error("cancelled"));
    this.poke();
  }

  /** Runs to completion, failure, cancellation or lost ownership; never rejects. */
  async run(): Promise<ExecutionOutcome> {
    try {
      return await this.loop();
    } catch (e) {
      this.abort.abort(e);
      await this.drained();
      const err = isDroverError(e)
        ? e
        : new DroverError("event-store-unavailable", String((e as Error)?.message ?? e), { cause: e });
      if (err.code === "execution-ownership-lost")
        this.env.log({
          event: "execution-ownership-lost",
          executionId: this.executionId,
          detail: err.message,
          completedSteps: this.completed.size,
        });
      return { state: "failed", reason: err.code, detail: err.message };
    }
  }

  private async loop(): Promise<ExecutionOutcome> {
    for (;;) {
      if (this.fatal) throw this.fatal;
      if (this.cancelRequested) return this.finishCancelled();
      const d = scheduleSteps(
        this.dag,
        { completed: this.completedIds, failures: this.failures, running: this.running },
        this.env.now().getTime(),
        this.env.maxWorkersPerRun,
      );
      switch (d.kind) {
        case "completed":
          return this.finishCompleted();
        case "failed":
          return this.finishFailed(d.stepId, d.attempt);
        case "continue":
          for (const s of d.start) {
            const acquired = await this.env.workers.acquire(this.abort.signal).then(
              () => true,
              () => false,
            );
            if (this.abort.signal.aborted) {
              if (acquired) this.env.workers.release();
              break;
            }
            void this.execute(s);
          }
          if (d.start.length === 0) await this.changed(d.wakeAt);
          break;
        default:
          assertNever(d);
      }
    }
  }

  /** One attempt of one step on a worker the loop already acquired; records its outcome durably. */
  private async execute(s: StepStart): Promise<void> {
    const step = this.dag.steps.find((x) => x.id === s.stepId) as Step;
    this.running.add(s.stepId);
    if (!this.firstStepLogged) {
      this.firstStepLogged = true;
      this.env.log({
        event: "first-step-started",
        executionId: this.executionId,
        stepId: s.stepId,
        attempt: s.attempt,
        sinceOpenMs: this.env.now().getTime() - this.startedAt,
        resumedAfter: this.opened.prior.completed.size,
      });
    }
    const t0 = this.env.now().getTime();
    try {
      const wakeAt = step.kind === "sleep" ? await this.timer(step.id, s.attempt, step.params.durationMs) : undefined;
      let output: Record<string, unknown> | undefined;
      let error: unknown;
      try {
        output = await this.env.runStep(step, {
          executionId: this.executionId,
          attempt: s.attempt,
          depDigests: this.completed,
          signal: this.abort.signal,
          llmBaseUrl: this.env.llmBaseUrl,
          ...(wakeAt === undefined ? {} : { sleepMs: Math.max(0, wakeAt - this.env.now().getTime()) }),
        });
      } catch (e) {
        error = e;
      }
      // After cancel or lost ownership nothing more is written: the step's result is dropped.
      if (this.abort.signal.aborted) return;
      const now = this.env.now();
      if (output !== undefined) {
        const outputDigest = sha256Hex(canonicalJson(output));
        await this.opened.exec.append(
          this.opened.emit("exec.step-completed", {
            stepId: s.stepId,
            attempt: s.attempt,
            output,
            outputDigest,
            durationMs: Math.max(0, now.getTime() - t0),
          } as DataOf<"exec.step-completed">),
        );
        this.failures.delete(s.stepId);
        this.completed.set(s.stepId, outputDigest);
        this.completedIds.add(s.stepId);
      } else {
        const retryAt = retryAtAfterFailure(step, s.attempt, now.getTime());
        const message = String((error as Error)?.message ?? error).slice(0, 2000);
        await this.opened.exec.append(
          this.opened.emit("exec.step-failed", {
            stepId: s.stepId,
            attempt: s.attempt,
            error: message,
            ...(retryAt === undefined ? {} : { retryAt: new Date(retryAt).toISOString() }),
          } as DataOf<"exec.step-failed">),
        );
        this.failures.set(s.stepId, retryAt === undefined ? { attempt: s.attempt } : { attempt: s.attempt, retryAt });
      }
    } catch (e) {
      this.fatal ??= e;
      this.abort.abort(e);
    } finally {
      this.running.delete(s.stepId);
      this.env.workers.release();
      this.poke();
    }
  }

  /**
   * A sleep step's durable timer: the journal's wake-up for this attempt if one was recorded (a
   * resumed execution sleeps only what is left), else a new one, made durable before the wait.
   */
  private async timer(stepId: string, attempt: number, durationMs: number): Promise<number> {
    const known = this.timers.get(stepId);
    if (known?.attempt === attempt) return known.wakeAt;
    const wakeAt = this.env.now().getTime() + durationMs;
    await this.opened.exec.append(
      this.opened.emit("exec.timer-started", {
        stepId,
        attempt,
        durationMs,
        wakeAt: new Date(wakeAt).toISOString(),
      } as DataOf<"exec.timer-started">),
    );
    this.timers.set(stepId, { attempt, wakeAt });
    return wakeAt;
  }

  private async finishCompleted(): Promise<ExecutionOutcome> {
    const outputDigest = sha256Hex(canonicalJson([...this.completed.entries()].sort(([a], [b]) => (a < b ? -1 : 1))));
    await this.opened.exec.append(this.opened.emit("exec.completed", { outputDigest }));
    await this.appendRun("run.completed", {
      executionId: this.executionId,
      localRunId: this.opened.localRunId,
      outputDigest,
    } as DataOf<"run.completed">);
    return { state: "completed" };
  }

  private async finishFailed(stepId: string, attempt: number): Promise<ExecutionOutcome> {
    this.abort.abort(new Error("execution failed"));
    await this.drained();
    const reason = {
      code: "step-attempts-exhausted" as const,
      detail: `step ${stepId} failed attempt ${attempt} of ${attempt}`,
    };
    await this.opened.exec.append(this.opened.emit("exec.failed", { reason, stepId } as DataOf<"exec.failed">));
    await this.appendRun("run.failed", {
      executionId: this.executionId,
      localRunId: this.opened.localRunId,
      reason,
    } as DataOf<"run.failed">);
    return { state: "failed", reason: reason.code, detail: reason.detail };
  }

  private async finishCancelled(): Promise<ExecutionOutcome> {
    await this.drained();
    if (this.fatal) throw this.fatal;
    await this.opened.exec.append(this.opened.emit("exec.cancelled", { reason: "CancelRun" }));
    await this.appendRun("run.cancelled", { reason: "CancelRun" });
    return { state: "cancelled" };
  }

  /** Run-aggregate terminal events: a conflict here (the run moved, e.g. cancelled by the API) is logged, not fatal. */
  private async appendRun<T extends "run.completed" | "run.failed" | "run.cancelled">(
    type: T,
    data: DataOf<T>,
  ): Promise<void> {
    try {
      await this.opened.run.append(this.opened.emit(type, data), RUN_REQUESTS);
    } catch (e) {
      if (!isDroverError(e, "execution-ownership-lost")) throw e;
      this.env.log({ event: "run-terminal-conflict", executionId: this.executionId, type, detail: e.message });
    }
  }

  private poke(): void {
    this.dirty = true;
    const w = this.wake;
    this.wake = undefined;
    w?.();
  }

  /** Resolves when a step finished, a cancel arrived, or `wakeAt` (a retry time) is reached. */
  private changed(wakeAt?: number): Promise<void> {
    if (this.dirty) {
      this.dirty = false;
      return Promise.resolve();
    }
    return new Promise((ok) => {
      const timer =
        wakeAt === undefined
          ? undefined
          : setTimeout(() => this.poke(), Math.max(0, wakeAt - this.env.now().getTime()));
      this.wake = () => {
        if (timer) clearTimeout(timer);
        this.dirty = false;
        ok();
      };
    });
  }

  private async drained(): Promise<void> {
    while (this.running.size > 0) await this.changed();
  }
}
