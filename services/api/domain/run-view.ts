import type { RunState } from "../../../aggregates/run.ts";
import type { DagDefinition, DroverEvent, StoredOutputRef } from "../../../contracts/index.ts";
import { stepStates, type StepView } from "./step-states.ts";
import { waitViews, type WaitView } from "./wait-views.ts";

/** A stored message that did not decode as an event, by stream sequence and subject, with the decoder's message. */
export interface UnreadableEvent {
  readonly seq: number;
  readonly subject: string;
  readonly error: string;
}

/** What `GET /v1/runs/:id` answers: the folded run aggregate, nothing another tenant could use. */
export interface RunView {
  readonly sharedRunId: string;
  readonly tenantId: string;
  readonly status: RunState["status"];
  readonly submittedSeq: number | null;
  /** Stream sequence of the run's last event: a client can resume the event feed after it. */
  readonly lastSeq: number;
  readonly executionId: string | null;
  readonly placement: {
    readonly runtimeInstanceId: string;
    readonly localRunId: string;
    readonly transport: string | null;
  } | null;
  readonly localRunIds: readonly string[];
  readonly recoveryPending: boolean;
  readonly lastReason: string | null;
  /** While queued: why the run waits (e.g. `waiting-for-key openai:gpt-4o 5/5`, `rate-limited until …`). */
  readonly waitingFor: string | null;
  readonly priority: number;
  readonly dispatchFailures: number;
  /** The worker version the run is pinned to (docs/worker-versions.md): set once it started; moved by an upgrade. */
  readonly workerVersion: string | null;
  readonly dag: DagDefinition | null;
  /** The run's input as submitted, or null. */
  readonly input: unknown;
  /** The run's output (its sink step's, or `{ stepId: output }` over several sinks) once completed, else null. */
  readonly output: unknown;
  /** Set when the output is kept in the object store; the API reads it back into `output`. */
  readonly outputRef: StoredOutputRef | null;
}

/**
 * The view of a folded run, or undefined when the run has no submission (no events, or events
 * without a `submitted`, which the API treats as not found rather than expose a half run).
 */
export function runView(s: RunState): RunView | undefined {
  if (s.status === "none" || s.sharedRunId === undefined || s.tenantId === undefined) return undefined;
  return {
    sharedRunId: s.sharedRunId,
    tenantId: s.tenantId,
    status: s.status,
    submittedSeq: s.submittedSeq ?? null,
    lastSeq: s.lastSeq,
    executionId: s.executionId ?? null,
    placement: s.placement
      ? {
          runtimeInstanceId: s.placement.runtimeInstanceId,
          localRunId: s.placement.localRunId,
          transport: s.placement.transport ?? null,
        }
      : null,
    localRunIds: s.localRunIds,
    recoveryPending: s.recoveryPending,
    lastReason: s.lastReason ?? null,
    waitingFor: s.waitingFor ?? null,
    priority: s.priority ?? 0,
    dispatchFailures: s.dispatchFailures,
    workerVersion: s.workerVersion ?? null,
    dag: s.dag ?? null,
    input: s.input ?? null,
    output: s.output?.inline ?? null,
    outputRef: s.output?.ref ?? null,
  };
}

/**
 * The view of a run whose `submitted` does not decode (a trusted producer published it straight to
 * JetStream): `submitted` until admission rejects it, then `rejected` with the reason. Undefined when
 * no undecodable message is a submission (a run without a submission is not found).
 */
export function undecodableSubmissionView(
  tenantId: string,
  sharedRunId: string,
  s: RunState,
  undecodable: readonly { readonly seq: number; readonly subject: string }[],
): RunView | undefined {
  const submission = undecodable.find((u) => u.subject.endsWith(".submitted"));
  if (!submission) return undefined;
  if (s.status !== "none" && s.status !== "rejected") return undefined;
  return {
    sharedRunId,
    tenantId,
    status: s.status === "none" ? "submitted" : "rejected",
    submittedSeq: submission.seq,
    lastSeq: Math.max(s.lastSeq, submission.seq),
    executionId: null,
    placement: null,
    localRunIds: [],
    recoveryPending: false,
    lastReason: s.lastReason ?? null,
    waitingFor: null,
    priority: 0,
    dispatchFailures: 0,
    workerVersion: null,
    dag: null,
    input: null,
    output: null,
    outputRef: null,
  };
}

/** Every ExecutionId a run's events name, in first-seen order: the journals its event history includes. */
export function executionIdsOf(
  events: readonly { readonly event: { readonly type: string; readonly data: unknown } }[],
): string[] {
  const ids: string[] = [];
  for (const { event } of events) {
    if (event.type !== "run.started" && event.type !== "run.requeued-for-resume") continue;
    const id = (event.data as { executionId?: unknown }).executionId;
    if (typeof id === "string" && !ids.includes(id)) ids.push(id);
  }
  return ids;
}

/**
 * What `GET /v1/runs/:id` answers: the run view, its labels, who asked to cancel it, the run it
 * reruns, and each step's state from its execution journals. The run's input and output are added
 * here by the issue "Tenants run their own code" (both come from the run's events as well).
 */
export interface RunDetail extends RunView {
  readonly labels: Readonly<Record<string, string>>;
  /**
   * Messages on the run's or its executions' subjects that are not valid events (a buggy producer,
   * a newer writer): left out of the fold, listed here so the answer says it is partial.
   */
  readonly unreadableEvents: readonly UnreadableEvent[];
  readonly rerunOf: string | null;
  /** The run this one forks, from which step (`run.submitted` forkedFrom). */
  readonly forkedFrom: {
    readonly sharedRunId: string;
    readonly fromStep: string;
    readonly executionId: string | null;
  } | null;
  /** Forks of this run (`run.forked`), in order: the other direction of the link. */
  readonly forks: readonly { readonly sharedRunId: string; readonly fromStep: string }[];
  /** The run step whose child this run is (`run.submitted` parent; docs/control-flow.md "Child runs"). */
  readonly parent: {
    readonly sharedRunId: string;
    readonly executionId: string;
    readonly stepId: string;
    readonly onParentCancel: string;
  } | null;
  /** Child runs its run steps submitted (`exec.child-run-submitted` of its executions): the other direction. */
  readonly children: readonly { readonly sharedRunId: string; readonly stepId: string; readonly attempt: number }[];
  readonly cancelRequested: { readonly by: string; readonly reason: string; readonly seq: number } | null;
  readonly steps: readonly StepView[];
  /** The run's wait steps, open or not, with the signal each got (docs/control-flow.md "Waits"). */
  readonly waits: readonly WaitView[];
}

/** The detail of a run from its view and its events (run and execution events, in stream order). Pure. */
export function runDetail(
  view: RunView,
  events: readonly { readonly seq: number; readonly event: DroverEvent }[],
  unreadable: readonly UnreadableEvent[] = [],
): RunDetail {
  const submitted = events.find((e) => e.event.type === "run.submitted")?.event as
    Extract<DroverEvent, { type: "run.submitted" }> | undefined;
  const cancel = events.find((e) => e.event.type === "run.cancel-requested") as
    { readonly seq: number; readonly event: Extract<DroverEvent, { type: "run.cancel-requested" }> } | undefined;
  return {
    ...view,
    labels: submitted?.data.labels ?? {},
    unreadableEvents: unreadable.map(({ seq, subject, error }) => ({ seq, subject, error })),
    rerunOf: submitted?.data.rerunOf ?? null,
    forkedFrom: submitted?.data.forkedFrom
      ? {
          sharedRunId: submitted.data.forkedFrom.sharedRunId,
          fromStep: submitted.data.forkedFrom.fromStep,
          executionId: submitted.data.forkedFrom.executionId ?? null,
        }
      : null,
    // A retried fork request may append its run.forked twice: each fork is listed once.
    forks: [
      ...new Map(
        events.flatMap((e) =>
          e.event.type === "run.forked"
            ? ([
                [e.event.data.forkRunId, { sharedRunId: e.event.data.forkRunId, fromStep: e.event.data.fromStep }],
              ] as const)
            : [],
        ),
      ).values(),
    ],
    parent: submitted?.data.parent
      ? {
          sharedRunId: submitted.data.parent.sharedRunId,
          executionId: submitted.data.parent.executionId,
          stepId: submitted.data.parent.stepId,
          onParentCancel: submitted.data.parent.onParentCancel,
        }
      : null,
    children: events.flatMap((e) =>
      e.event.type === "exec.child-run-submitted"
        ? [{ sharedRunId: e.event.data.childRunId, stepId: e.event.data.stepId, attempt: e.event.data.attempt }]
        : [],
    ),
    cancelRequested: cancel ? { by: cancel.event.data.by, reason: cancel.event.data.reason, seq: cancel.seq } : null,
    steps: view.dag ? stepStates(view.dag, events, view.status) : [],
    waits: view.dag ? waitViews(view.dag, events, view.status) : [],
  };
}
