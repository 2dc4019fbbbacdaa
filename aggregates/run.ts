import { assertNever } from "../contracts/assert-never.ts";
import { EVENT_TYPES } from "../contracts/events.ts";
import type {
  DagDefinition,
  DataOf,
  DroverEvent,
  EventType,
  WorkerVersion,
  ExecutionId,
  ForensicsId,
  LocalRunId,
  RuntimeInstanceId,
  ScaleOutRequestId,
  SharedRunId,
  TenantId,
} from "../contracts/index.ts";

type RunEvent = Extract<DroverEvent, { type: `run.${string}` }>;

export type RunStatus =
  | "none"
  | "submitted"
  | "queued"
  | "admitted"
  | "dispatched"
  | "started"
  | "requeued-for-resume"
  | "requeued-for-local-queued-recovery"
  | "completed"
  | "failed"
  | "cancelled"
  | "rejected";

/** A placement: the run's attempt on one runtime's local queue. */
export interface Placement {
  readonly runtimeInstanceId: RuntimeInstanceId;
  readonly localRunId: LocalRunId;
  readonly reservationId?: string;
  readonly admittedSeq: number;
  readonly dispatchedSeq?: number;
  readonly transport?: DataOf<"run.dispatched">["transport"];
  /** The worker version of the runtime placed on (`admitted.workerVersion`). */
  readonly workerVersion?: WorkerVersion;
}

/**
 * The run aggregate's state, folded from `drover.run.<tenant>.<sharedRunId>.*`. Shared by admission
 * (placement decisions), recovery (inventory: runs whose latest placement is a fenced runtime) and
 * the API (status). Pure.
 */
export interface RunState {
  readonly status: RunStatus;
  readonly sharedRunId?: SharedRunId;
  readonly tenantId?: TenantId;
  readonly dag?: DagDefinition;
  /** The run's input as submitted (absent: none). */
  readonly input?: unknown;
  /** The run's output once completed: inline, or a reference to the object store. */
  readonly output?: { readonly inline?: unknown; readonly ref?: DataOf<"run.completed">["outputRef"] };
  readonly submittedSeq?: number;
  /** The latest placement (admitted, maybe dispatched); cleared by a requeue or dispatch failure. */
  readonly placement?: Placement;
  /** Every LocalRunId ever used by this run, in order. */
  readonly localRunIds: readonly LocalRunId[];
  /** Set once the DAG started; the same across an in-flight recovery. */
  readonly executionId?: ExecutionId;
  /** True while the run waits for placement as a recovery item (ahead of new work). */
  readonly recoveryPending: boolean;
  /** When requeued for resume: the execution to resume and the epoch recovery assigned. */
  readonly resume?: { readonly executionId: ExecutionId; readonly epoch: number; readonly forensicsId: ForensicsId };
  readonly lastReason?: string;
  /** While queued: the detail of the latest `queued-globally` (why it waits, e.g. `waiting-for-key openai:gpt-4o 5/5`). */
  readonly waitingFor?: string;
  /** The run's labels and priority as submitted (flow keys and admission order, docs/flow-control.md). */
  readonly labels?: Readonly<Record<string, string>>;
  readonly priority?: number;
  readonly dispatchFailures: number;
  /** The runtime of the latest dispatch failure (admission tries another first). */
  readonly lastFailedRuntimeId?: RuntimeInstanceId;
  /** Scale-out requests this run asked for (each recorded once). */
  readonly scaleOutRequestIds: readonly ScaleOutRequestId[];
  /** Set by `run.cancel-requested` (the first one counts): admission and the runtime then end the run `cancelled`. */
  readonly cancelRequested?: { readonly by: string; readonly reason: string; readonly seq: number };
  /** Set on a fork (`run.submitted` forkedFrom): the original and the steps whose outputs it reuses. */
  readonly forkedFrom?: DataOf<"run.submitted">["forkedFrom"];
  /** Forks of this run (`run.forked`), in order. */
  readonly forks: readonly { readonly forkRunId: SharedRunId; readonly fromStep: string; readonly seq: number }[];
  /**
   * The worker version the run is pinned to: its placement's when it first started (docs/worker-versions.md).
   * Resumes and redispatches go to runtimes of this version only; `run.upgraded` moves it to a newer one.
   */
  readonly workerVersion?: WorkerVersion;
  /** Stream sequence of the last event: what the next conditional append expects. */
  readonly lastSeq: number;
}

export const initialRunState = (): RunState => ({
  status: "none",
  localRunIds: [],
  recoveryPending: false,
  dispatchFailures: 0,
  scaleOutRequestIds: [],
  forks: [],
  lastSeq: 0,
});

/**
 * Run events other writers append without taking the run over: the API's cancel request, fork
 * link, wait signal and upgrade. The runtime steps over them when it appends its terminal run event (the
 * run is still its own); starting a run steps over a signal only (execution-open.ts).
 */
export const RUN_REQUESTS: ReadonlySet<string> = new Set([
  "run.cancel-requested",
  "run.forked",
  "run.signal-received",
  "run.upgraded",
]);

export const isTerminal = (s: RunStatus): boolean =>
  s === "completed" || s === "failed" || s === "cancelled" || s === "rejected";

/**
 * The run events that decide when a run first ends: the terminal ones, and
 * those that set or clear the placement a runtime's terminal event must match. A fold of these
 * alone first becomes terminal at the same event as the fold of every event (run.unit.test.ts), so
 * a follower that needs only a run's end, and forgets the run then, may be sent these alone. (After
 * an end a late `started` or `dispatched` of the placed runtime moves the full fold's status again.)
 */
export const RUN_END_EVENTS: readonly EventType[] = [
  "run.admitted",
  "run.dispatch-failed",
  "run.requeued-for-resume",
  "run.requeued-for-local-queued-recovery",
  "run.completed",
  "run.failed",
  "run.cancelled",
  "run.rejected",
];

/**
 * The run events that move what recovery reads of a run (its status past `submitted`, placement,
 * execution, recovery flag and pinned worker version): every run event but the submission (its DAG
 * and input, the largest event of a run) and the requests and links that change none of those. A
 * fold of these alone equals the fold of every event on those fields after every event
 * (run.unit.test.ts), so recovery is sent these alone. Listed by exclusion: a new run event type is
 * followed until shown not to matter.
 */
export const RUN_PLACEMENT_EVENTS: readonly EventType[] = EVENT_TYPES.filter(
  (t) =>
    t.startsWith("run.") &&
    ![
      "run.submitted",
      "run.scale-out-requested",
      "run.replacement-selected",
      "run.cancel-requested",
      "run.forked",
      "run.signal-received",
    ].includes(t),
);

/** Folds one run event at its stream sequence. */
export function evolveRun(s: RunState, e: RunEvent, seq: number): RunState {
  // Idempotent by stream sequence: a redelivered or already-applied event changes nothing.
  if (seq <= s.lastSeq) return s;
  if (fromUnplacedRuntime(s, e)) return { ...s, lastSeq: seq };
  const applied = apply(s, e, seq);
  // One copy per event: `apply` returns `s` itself or a state it just made, which no one else holds yet.
  const next: { -readonly [K in keyof RunState]: RunState[K] } = applied === s ? { ...s } : applied;
  next.lastSeq = seq;
  // Why a run waits is true only while it is queued.
  if (next.status !== "queued" && next.waitingFor !== undefined) next.waitingFor = undefined;
  return next;
}

/**
 * A run event written by a runtime (`run.started`, `completed`, `failed`, `cancelled`) counts only
 * from the runtime the run is placed on (admitted, and not since dispatch-failed or requeued). NATS
 * subjects cannot tell runtimes apart (a runtime may write these subjects for every run of its
 * tenants), so a runtime's write for a run placed elsewhere changes no decision: it is stepped over.
 * The writer is what the event declares: this stops a confused or stale runtime, not a forger
 * (docs/nats-identities.md, "Shared subjects"). `run.submitted` and `run.cancel-requested` are never
 * a runtime's (the server refuses them; a run step's child run is submitted by admission), so one
 * that declares a runtime writer is stepped over whoever the run is placed on.
 */
export const fromUnplacedRuntime = (s: RunState, e: RunEvent): boolean =>
  e.writer.service === "runtime" &&
  (NOT_RUNTIME_WRITES.has(e.type) || e.writer.runtimeInstanceId !== s.placement?.runtimeInstanceId);

const NOT_RUNTIME_WRITES: ReadonlySet<string> = new Set(["run.submitted", "run.cancel-requested"]);

function apply(s: RunState, e: RunEvent, seq: number): RunState {
  switch (e.type) {
    case "run.submitted":
      // Trusted producers publish without a sequence expectation: only the first submission counts.
      if (s.status !== "none") return s;
      return {
        ...s,
        status: "submitted",
        sharedRunId: e.data.sharedRunId,
        tenantId: e.tenantId,
        dag: e.data.dag,
        ...(e.data.input === undefined ? {} : { input: e.data.input }),
        ...(Object.keys(e.data.labels).length === 0 ? {} : { labels: e.data.labels }),
        ...(e.data.priority === undefined ? {} : { priority: e.data.priority }),
        ...(e.data.forkedFrom === undefined ? {} : { forkedFrom: e.data.forkedFrom }),
        submittedSeq: seq,
      };
    case "run.admitted":
      return {
        ...s,
        status: "admitted",
        placement: {
          runtimeInstanceId: e.data.runtimeInstanceId,
          localRunId: e.data.localRunId,
          reservationId: e.data.reservationId,
          admittedSeq: seq,
          ...(e.data.workerVersion ? { workerVersion: e.data.workerVersion } : {}),
        },
        localRunIds: s.localRunIds.includes(e.data.localRunId) ? s.localRunIds : [...s.localRunIds, e.data.localRunId],
      };
    case "run.queued-globally":
      return isTerminal(s.status)
        ? { ...s, lastReason: e.data.reason.code }
        : { ...s, status: "queued", lastReason: e.data.reason.code, waitingFor: e.data.reason.detail };
    case "run.scale-out-requested":
      return { ...s, scaleOutRequestIds: [...s.scaleOutRequestIds, e.data.requestId] };
    case "run.dispatch-failed":
      return {
        ...s,
        status: "queued",
        placement: undefined,
        lastReason: e.data.reason.code,
        waitingFor: e.data.reason.detail,
        dispatchFailures: s.dispatchFailures + 1,
        lastFailedRuntimeId: e.data.runtimeInstanceId,
      };
    case "run.dispatched":
      return s.placement
        ? { ...s, status: "dispatched", placement: { ...s.placement, dispatchedSeq: seq, transport: e.data.transport } }
        : s;
    case "run.started": {
      const pinned = s.workerVersion ?? s.placement?.workerVersion;
      return {
        ...s,
        status: "started",
        executionId: e.data.executionId,
        recoveryPending: false,
        resume: undefined,
        ...(pinned ? { workerVersion: pinned } : {}),
      };
    }
    case "run.requeued-for-resume":
      return {
        ...s,
        status: "requeued-for-resume",
        placement: undefined,
        recoveryPending: true,
        resume: { executionId: e.data.executionId, epoch: e.data.newEpoch, forensicsId: e.data.forensicsId },
      };
    case "run.requeued-for-local-queued-recovery":
      return { ...s, status: "requeued-for-local-queued-recovery", placement: undefined, recoveryPending: true };
    case "run.replacement-selected":
      return s;
    case "run.completed":
      return {
        ...s,
        status: "completed",
        recoveryPending: false,
        ...(e.data.output === undefined && e.data.outputRef === undefined
          ? {}
          : { output: { inline: e.data.output, ref: e.data.outputRef } }),
      };
    case "run.failed":
      return { ...s, status: "failed", recoveryPending: false, lastReason: e.data.reason.code };
    case "run.cancel-requested":
      return s.cancelRequested || isTerminal(s.status)
        ? s
        : { ...s, cancelRequested: { by: e.data.by, reason: e.data.reason, seq } };
    case "run.cancelled":
      return { ...s, status: "cancelled", recoveryPending: false };
    case "run.forked":
      return s.forks.some((f) => f.forkRunId === e.data.forkRunId)
        ? s
        : { ...s, forks: [...s.forks, { forkRunId: e.data.forkRunId, fromStep: e.data.fromStep, seq }] };
    case "run.rejected":
      return { ...s, status: "rejected", lastReason: e.data.reason.code };
    case "run.upgraded":
      // The API appends it only to a pinned, unfinished run, conditionally on the run's last sequence.
      return isTerminal(s.status) || s.workerVersion === undefined ? s : { ...s, workerVersion: e.data.toVersion };
    case "run.signal-received":
      // A wait's signal (the runtime reads it when the wait opens): no lifecycle state.
      return s;
    default:
      return assertNever(e, "run event");
  }
}

/** Folds a run's history (events with their stream sequences). */
export function foldRun(events: readonly { seq: number; event: DroverEvent }[]): RunState {
  return events.reduce(
    (s, { seq, event }) => (event.type.startsWith("run.") ? evolveRun(s, event as RunEvent, seq) : s),
    initialRunState(),
  );
}
export type { RunEvent };

/**
 * A terminal run's state without its DAG, input and output: what folds that keep finished runs in
 * memory (admission's index, recovery's state) hold of them. No decision reads them once the run
 * ended (a terminal status is final); the log keeps them (`drover runs get` reads them there).
 */
export function withoutPayload(s: RunState): RunState {
  if (!isTerminal(s.status) || (s.dag === undefined && s.input === undefined && s.output === undefined)) return s;
  const { dag: _dag, input: _input, output: _output, ...rest } = s;
  return rest;
}
