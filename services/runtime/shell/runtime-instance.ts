import {
  DroverError,
  type ErrorCode,
  type HostIncarnation,
  type LocalRunId,
  type QueueStatus,
  type RunStatus,
  type RuntimeSizing,
} from "../../../contracts/index.ts";
import type { z } from "zod";
import {
  admitRun,
  availableSlots,
  newRunsHeld,
  nextToStart,
  runsToStart,
  type QueueFacts,
} from "../domain/local-queue.ts";
import type { ExecutionState } from "../../../aggregates/execution.ts";
import {
  checkDispatched,
  checkResume,
  executionIdFor,
  openFresh,
  openResume,
  readDispatchAhead,
  type DispatchPayload,
  type DispatchReadAhead,
  type JournalEnv,
  type ResumePayload,
} from "./execution-open.ts";
import { Execution, type ExecutorEnv } from "./execution.ts";
import type { RunSlot } from "./run-slot.ts";
import { storeFailureOf } from "./store-failure.ts";

type RunState = z.infer<typeof RunStatus>["state"];

interface LocalRun {
  readonly localRunId: LocalRunId;
  readonly request:
    | { readonly mode: "start"; readonly payload: DispatchPayload }
    | { readonly mode: "resume"; readonly payload: ResumePayload };
  readonly acceptedAt: number;
  /** A resume's journal as its command checked it, until its open appends on it (never read again: execution-open.ts). */
  checked?: ExecutionState;
  state: RunState;
  execution?: Execution;
  /** Holds one of the runtime's run slots (false while its execution is parked on a wait). */
  holdsSlot?: boolean;
  /** CancelRun arrived while the execution was still being opened. */
  cancelRequested?: boolean;
  failure?: { readonly code: ErrorCode; readonly detail: string };
}

/** Terminal local runs kept for GetRunStatus (and DispatchRun idempotency) before the oldest are forgotten. */
const KEEP_FINISHED = 10_000;

/**
 * One runtime instance's volatile state: the local queue, the runs it accepted and their executions.
 * The queue is never recovery truth (the journal is); losing it with the process is expected.
 * Methods map 1:1 to runtime commands and throw `DroverError` refusals (local-queue-full,
 * runtime-draining, resume-epoch-mismatch, contract-violation) that the command handler turns into
 * structured results.
 */
export class RuntimeInstance {
  private readonly runs = new Map<LocalRunId, LocalRun>();
  private readonly queue: LocalRun[] = [];
  private runningCount = 0;
  /** Per tenant, its runs started here and not ended (running or parked): the local queue's fair order. */
  private readonly going = new Map<string, number>();
  /** Executions parked on their waits: accepted and not ended, holding no run slot. */
  private parkedCount = 0;
  /** Parked executions whose wait resolved, waiting for a slot: served before the queue's new runs. */
  private unparking: (() => void)[] = [];
  /** ResumeExecution commands whose checks are still reading: each holds a free run slot from new runs (`newRunsHeld`). */
  private resumesChecking = 0;
  private paused = false;
  private draining = false;
  private idleWaiters: (() => void)[] = [];
  /** Told when a place is given back (a run ended, or parked on a wait): the heartbeat says so soon. */
  onPlaceFreed?: () => void;

  constructor(
    private readonly sizing: RuntimeSizing,
    private readonly journal: JournalEnv,
    private readonly executor: ExecutorEnv,
    private readonly hostIncarnation: HostIncarnation,
  ) {}

  /**
   * DispatchRun: idempotent per LocalRunId (a repeat returns the run's current status with
   * `duplicate: true`). Refuses a `dispatchedSeq` that is not this run's dispatch to this runtime
   * and a LocalRunId already used for another run (contract-violation), a draining runtime
   * (runtime-draining) and a full queue (local-queue-full).
   */
  async dispatch(payload: DispatchPayload, early?: DispatchReadAhead): Promise<Record<string, unknown>> {
    if (!this.runs.has(payload.localRunId)) await checkDispatched(this.journal, payload, undefined, early);
    return this.accept({ mode: "start", payload });
  }

  /** Starts a DispatchRun's dispatch check read from its unchecked body (execution-open.ts `readDispatchAhead`). */
  readAhead(body: unknown): DispatchReadAhead | undefined {
    const localRunId = (body as { payload?: { localRunId?: unknown } } | null)?.payload?.localRunId;
    // A repeat of a run this runtime holds is answered without a check: nothing to read.
    if (typeof localRunId === "string" && this.runs.has(localRunId as LocalRunId)) return undefined;
    return readDispatchAhead(this.journal, body);
  }

  /**
   * ResumeExecution: checks the journal (the pending recovery epoch must equal `epoch`) and that
   * `dispatchedSeq` is this resume's dispatch to this runtime, side by side, then queues the resume
   * ahead of new work (recovery items go first), with the journal as checked for its open to reuse.
   * While it is checked it holds a free run slot: a DispatchRun that arrives meanwhile (its check is
   * quicker) queues instead of taking the slot the resume was placed for (`newRunsHeld`).
   * Idempotent per LocalRunId.
   */
  async resume(payload: ResumePayload): Promise<Record<string, unknown>> {
    if (this.runs.has(payload.localRunId)) return this.accept({ mode: "resume", payload });
    this.resumesChecking++;
    let holding = true;
    try {
      const checked = await checkResume(this.journal, payload);
      this.resumesChecking--;
      holding = false;
      return this.accept({ mode: "resume", payload }, checked); // queued ahead of new runs, then started
    } finally {
      if (holding) this.resumesChecking--;
      this.pump(); // a refused resume gives its held slot back to the new runs
    }
  }

  private accept(request: LocalRun["request"], checked?: ExecutionState): Record<string, unknown> {
    const p = request.payload;
    const known = this.runs.get(p.localRunId);
    if (known) {
      const same =
        known.request.mode === request.mode &&
        known.request.payload.sharedRunId === p.sharedRunId &&
        known.request.payload.tenantId === p.tenantId;
      if (!same)
        throw new DroverError(
          "contract-violation",
          `LocalRunId ${p.localRunId} was already used for another run or operation on this runtime`,
        );
      return { duplicate: true, run: this.status(p.localRunId) };
    }
    const admission = admitRun(this.facts(), this.sizing);
    if (!admission.accepted)
      throw new DroverError(admission.code, admission.detail, { details: { ...this.queueStatus() } });
    const run: LocalRun = {
      localRunId: p.localRunId,
      request,
      acceptedAt: this.executor.clock.now().getTime(),
      ...(checked ? { checked } : {}),
      state: "queued",
    };
    this.runs.set(p.localRunId, run);
    if (request.mode === "resume") this.queue.unshift(run);
    else this.queue.push(run);
    this.forgetOldFinished();
    this.pump();
    return { duplicate: false, run: this.status(p.localRunId) };
  }

  /** GetRunStatus: `unknown` for a LocalRunId this process never accepted (or forgot). */
  status(localRunId: LocalRunId): z.infer<typeof RunStatus> {
    const run = this.runs.get(localRunId);
    if (!run) return { localRunId, state: "unknown" };
    const executionId =
      run.execution?.executionId ??
      (run.request.mode === "resume"
        ? run.request.payload.executionId
        : run.state === "queued"
          ? undefined
          : executionIdFor(run.request.payload.sharedRunId, localRunId));
    return {
      localRunId,
      state: run.state,
      ...(executionId ? { executionId } : {}),
      ...(run.execution ? { completedSteps: run.execution.completedSteps } : {}),
      ...(run.failure ? { failureReason: run.failure.code, failureDetail: run.failure.detail.slice(0, 2000) } : {}),
    };
  }

  queueStatus(): z.infer<typeof QueueStatus> {
    const f = this.facts();
    return {
      hostIncarnation: this.hostIncarnation,
      queuedRuns: f.queued,
      runningRuns: f.running,
      parkedRuns: this.parkedCount,
      availableSlots: availableSlots(f, this.sizing),
      workers: this.executor.workers.size,
      availableWorkers: this.executor.workers.availableWorkers,
      paused: this.paused,
      draining: this.draining,
    };
  }

  /** Heartbeat facts: what this process itself knows, nothing about how it is reached. */
  localFacts(): z.infer<typeof QueueStatus> & { activeWorkers: number } {
    return { ...this.queueStatus(), activeWorkers: this.executor.workers.activeWorkers };
  }

  pause(): void {
    this.paused = true;
    this.notifyIdle();
  }
  resumeQueue(): void {
    this.paused = false;
    this.pump();
  }

  /** The runs accepted and not ended (queued, running or parked): what a drain cut short leaves (stop.ts). */
  unfinished(): readonly string[] {
    return [...this.runs.values()]
      .filter((r) => r.state === "queued" || r.state === "running")
      .map((r) => r.localRunId);
  }

  /** Drain: take no new runs; finish the ones accepted (queued ones still start, unless the queue is paused). */
  drain(): void {
    this.draining = true;
    this.pump();
    this.notifyIdle();
  }

  /** CancelRun: a queued run leaves the queue (nothing was written for it); a running one is cancelled through its journal. */
  cancel(localRunId: LocalRunId): z.infer<typeof RunStatus> {
    const run = this.runs.get(localRunId);
    if (!run) throw new DroverError("not-found", `no local run ${localRunId} on this runtime`);
    if (run.state === "queued") {
      this.queue.splice(this.queue.indexOf(run), 1);
      run.state = "cancelled";
      delete run.checked;
      this.notifyIdle();
    } else if (run.state === "running") {
      run.cancelRequested = true;
      run.execution?.cancel();
    }
    return this.status(localRunId);
  }

  /**
   * Resolves once nothing runs and no queued run can start (used by SIGTERM drain). Runs held by a
   * paused queue are handed back, not waited for: they wrote nothing, and recovery requeues a
   * runtime's local-queued runs once it is gone. Resolves with their LocalRunIds.
   */
  whenIdle(): Promise<readonly string[]> {
    if (this.idle()) return Promise.resolve(this.queue.map((r) => r.localRunId));
    return new Promise((ok) => this.idleWaiters.push(() => ok(this.queue.map((r) => r.localRunId))));
  }

  // A drain waits for parked executions too: they are runs this runtime accepted.
  private idle(): boolean {
    return this.runningCount === 0 && this.parkedCount === 0 && (this.queue.length === 0 || this.paused);
  }

  /** Queued counts the new runs and the parked executions waiting to take a slot back. */
  private facts(): QueueFacts {
    return {
      queued: this.queue.length + this.unparking.length,
      running: this.runningCount,
      paused: this.paused,
      draining: this.draining,
    };
  }

  private pump(): void {
    // A parked execution whose wait resolved takes a free slot first, ahead of new runs (paused or not:
    // pausing holds new runs, not runs already going).
    while (this.unparking.length > 0 && this.runningCount < this.sizing.maxConcurrentRuns) {
      this.runningCount++;
      this.parkedCount--;
      this.unparking.shift()!();
    }
    for (let n = runsToStart(this.facts(), this.sizing); n > 0; n--) {
      const at = nextToStart(
        this.queue.map((r) => ({ resume: r.request.mode === "resume", tenantId: r.request.payload.tenantId })),
        (t) => this.going.get(t) ?? 0,
        newRunsHeld(this.facts(), this.sizing, this.resumesChecking),
      );
      if (at < 0) return;
      const [run] = this.queue.splice(at, 1);
      if (!run) return;
      const tenantId = run.request.payload.tenantId;
      this.going.set(tenantId, (this.going.get(tenantId) ?? 0) + 1);
      this.runningCount++;
      run.state = "running";
      run.holdsSlot = true;
      void this.execute(run).finally(() => {
        const left = (this.going.get(tenantId) ?? 1) - 1;
        if (left > 0) this.going.set(tenantId, left);
        else this.going.delete(tenantId);
        if (run.holdsSlot) this.runningCount--;
        else this.parkedCount--;
        run.holdsSlot = false;
        this.pump();
        this.notifyIdle();
        this.onPlaceFreed?.();
      });
    }
  }

  /**
   * The run slot of `run`'s execution (docs/control-flow.md "What a wait holds"): parking gives it
   * back (the heartbeat shows it free, admission may place another run here); unparking takes one
   * again, at once when one is free, else ahead of every queued new run.
   */
  private slotOf(run: LocalRun): RunSlot {
    return {
      park: () => {
        if (!run.holdsSlot) return;
        run.holdsSlot = false;
        this.runningCount--;
        this.parkedCount++;
        this.pump();
        this.onPlaceFreed?.();
      },
      unpark: (signal) => {
        if (run.holdsSlot) return Promise.resolve();
        return new Promise<void>((ok, fail) => {
          const grant = () => {
            run.holdsSlot = true;
            signal.removeEventListener("abort", onAbort);
            ok();
          };
          const onAbort = () => {
            const i = this.unparking.indexOf(grant);
            if (i >= 0) this.unparking.splice(i, 1);
            fail(signal.reason);
          };
          if (signal.aborted) return onAbort();
          signal.addEventListener("abort", onAbort, { once: true });
          this.unparking.push(grant);
          this.pump();
        });
      },
    };
  }

  private async execute(run: LocalRun): Promise<void> {
    const checked = run.checked;
    delete run.checked;
    try {
      const opened =
        run.request.mode === "start"
          ? await openFresh(this.journal, run.request.payload)
          : await openResume(this.journal, run.request.payload, checked);
      const execution = new Execution(
        this.executor,
        opened,
        run.request.payload.dag,
        run.acceptedAt,
        run.request.payload.input,
        this.slotOf(run),
      );
      run.execution = execution;
      if (run.cancelRequested) execution.cancel();
      const outcome = await execution.run();
      run.state = outcome.state;
      if (outcome.state === "failed") run.failure = { code: outcome.reason, detail: outcome.detail };
    } catch (e) {
      run.state = "failed";
      const err = storeFailureOf(e);
      run.failure = { code: err.code, detail: err.message };
      if (run.failure.code === "execution-ownership-lost")
        this.executor.log({
          event: "execution-ownership-lost",
          localRunId: run.localRunId,
          detail: run.failure.detail,
        });
    }
  }

  private notifyIdle(): void {
    if (!this.idle()) return;
    const waiters = this.idleWaiters;
    this.idleWaiters = [];
    for (const w of waiters) w();
  }

  private forgetOldFinished(): void {
    if (this.runs.size <= KEEP_FINISHED) return;
    for (const [id, r] of this.runs) {
      if (this.runs.size <= KEEP_FINISHED) break;
      if (r.state !== "queued" && r.state !== "running") this.runs.delete(id);
    }
  }
}
