import { setTimeout as delay } from "node:timers/promises";
import { foldRun, isTerminal, type RunState } from "../../../aggregates/run.ts";
import {
  childRunKey,
  DagDefinition,
  DroverError,
  isDroverError,
  resolveRefs,
  type DroverEvent,
  EventId,
  type SharedRunId,
  type Step,
  type StepId,
} from "../../../contracts/index.ts";
import { submissionIds } from "../../../platform/submission-ids.ts";
import type { OutputStore } from "../../../platform/output-store.ts";
import { aggregateSubject, runRef } from "../../../streams/subjects.ts";
import type { EventStore } from "../../../streams/types.ts";
import type { StreamLayout } from "../../../streams/layout.ts";
import type { OpenedExecution } from "./execution-open.ts";
import { recordedOutput } from "./step-output.ts";
import type { StepRunner } from "./step-runners.ts";

type RunStep = Extract<Step, { kind: "run" }>;

/** What a run step needs from its runtime: the event store (the child's run subject) and its outputs. */
export interface ChildRunPort {
  readonly store: EventStore;
  readonly layout: StreamLayout;
  readonly outputs?: OutputStore;
  /** How often a waiting run step looks at its child run (default 250 ms). */
  readonly pollMs?: number;
  readonly log?: (fields: Record<string, unknown>) => void;
}

/** What the execution lends: its journal and the child runs its journal names (mutable). */
export interface ChildRunHost {
  readonly opened: OpenedExecution;
  readonly port: ChildRunPort;
  readonly children: Map<string, { attempt: number; childRunId: string }>;
}

const idsOf = (host: ChildRunHost, stepId: string, attempt: number) =>
  submissionIds(host.opened.tenantId, childRunKey(host.opened.executionId, stepId, attempt), () => {
    throw new Error("a child run's ids are derived, never minted");
  });

/**
 * The journaled decision of a run step's attempt: `exec.child-run-submitted` with the derived child
 * run id, appended (conditionally, like every exec append) before the child is submitted, unless the
 * journal already holds it (a resumed execution). Returns the child run id.
 */
export async function childRunDecision(host: ChildRunHost, stepId: StepId, attempt: number): Promise<SharedRunId> {
  const known = host.children.get(stepId);
  const childRunId = idsOf(host, stepId, attempt).sharedRunId as SharedRunId;
  if (known?.attempt === attempt) return childRunId;
  const { opened } = host;
  await opened.exec.append(opened.emit("exec.child-run-submitted", { stepId, attempt, childRunId }));
  host.children.set(stepId, { attempt, childRunId });
  return childRunId;
}

/**
 * One attempt of a run step: submits the child (exactly once: `run.submitted` expecting an empty
 * subject, with ids derived from the parent execution and step; a conflict means it is there
 * already), then waits, holding no worker, until the child ends. Completes with the child's output;
 * a failed, cancelled or rejected child fails the attempt with `child-run-failed` naming it.
 */
export async function runChild(
  host: ChildRunHost,
  step: RunStep,
  attempt: number,
  data: { readonly input: unknown; readonly outputs: ReadonlyMap<string, unknown> },
  signal: AbortSignal,
): Promise<unknown> {
  const childRunId = await childRunDecision(host, step.id, attempt);
  const ref = runRef(host.opened.tenantId, childRunId);
  let state = foldRun((await host.port.store.read(ref)).events);
  if (state.status === "none") state = await submit(host, step, attempt, data, childRunId);
  for (;;) {
    if (isTerminal(state.status)) return ended(host, state, childRunId);
    const seq = state.lastSeq;
    // A read that fails (NATS briefly away) counts as "not moved": the step keeps waiting, it does not fail.
    const moved = () =>
      host.port.store.lastSeq(ref).then(
        (at) => at !== seq,
        () => false,
      );
    while (!(await moved())) await delay(host.port.pollMs ?? 250, undefined, { signal });
    state = foldRun((await host.port.store.read(ref)).events);
  }
}

async function submit(
  host: ChildRunHost,
  step: RunStep,
  attempt: number,
  data: { readonly input: unknown; readonly outputs: ReadonlyMap<string, unknown> },
  childRunId: SharedRunId,
): Promise<RunState> {
  const { opened, port } = host;
  let input: unknown;
  try {
    input = resolveRefs(step.params, data, () => {
      throw new Error("a run step's params hold no $secret");
    });
  } catch (e) {
    throw new DroverError("reference-unresolved", `step ${step.id}: ${(e as Error).message}`, { retryable: false });
  }
  const ids = idsOf(host, step.id, attempt);
  const parentRunId = opened.run.ref.id as SharedRunId;
  const emitted = opened.emit("run.submitted", {
    sharedRunId: childRunId,
    dag: DagDefinition.parse(step.dag),
    idempotencyKey: childRunKey(opened.executionId, step.id, attempt),
    source: "run-step",
    labels: { "drover.parent": parentRunId },
    parent: {
      sharedRunId: parentRunId,
      executionId: opened.executionId,
      stepId: step.id,
      attempt,
      onParentCancel: step.onParentCancel,
    },
    ...(input === undefined ? {} : { input: input as never }),
  });
  const event = {
    ...emitted,
    eventId: EventId.parse(ids.eventId),
    correlationId: childRunId,
    causationId: `exec:${opened.executionId}:${step.id}`,
  } as DroverEvent;
  const ref = runRef(opened.tenantId, childRunId);
  try {
    await port.store.append(ref, event, {
      expectedSeq: 0,
      msgId: `${aggregateSubject(port.layout, ref)}:${ids.eventId}`,
    });
  } catch (e) {
    // Someone (this execution before a crash) submitted it already: the run is there, read it.
    if (!isDroverError(e, "version-conflict")) throw e;
  }
  return foldRun((await port.store.read(ref)).events);
}

async function ended(host: ChildRunHost, s: RunState, childRunId: string): Promise<unknown> {
  if (s.status === "completed") {
    const ref = s.output?.ref;
    return recordedOutput({ output: s.output?.inline ?? null, ...(ref ? { outputRef: ref } : {}) }, host.port.outputs);
  }
  const why = (await host.port.store.read(runRef(host.opened.tenantId, childRunId))).events.findLast(
    (e) => e.event.type === "run.failed" || e.event.type === "run.cancelled" || e.event.type === "run.rejected",
  )?.event;
  const detail =
    why?.type === "run.failed" || why?.type === "run.rejected"
      ? `: ${why.data.reason.code}: ${why.data.reason.detail}`
      : why?.type === "run.cancelled"
        ? ` (${why.data.by ?? "no one named"}${why.data.reason ? `: ${why.data.reason}` : ""})`
        : "";
  throw new DroverError("child-run-failed", `child run ${childRunId} ${s.status}${detail}`.slice(0, 1500));
}

/** The step runner of an execution: run steps go to {@link runChild} when the runtime can submit child runs. */
export const withChildRuns =
  (host: ChildRunHost | undefined, runStep: StepRunner): StepRunner =>
  (step, ctx) =>
    host && step.kind === "run"
      ? runChild(host, step, ctx.attempt, ctx.data ?? { input: null, outputs: new Map() }, ctx.signal)
      : runStep(step, ctx);

/** The child-run side of an execution, when its runtime can submit child runs. */
export const childHostOf = (port: ChildRunPort | undefined, opened: OpenedExecution): ChildRunHost | undefined =>
  port && { opened, port, children: new Map([...opened.prior.children].map(([k, v]) => [k, { ...v }])) };

/**
 * Cancels the unfinished child runs of a cancelled execution whose steps say `onParentCancel:
 * "cancel"`: `run.cancel-requested` (by `run:<parent>`) conditionally on each child's last
 * sequence, re-read on a conflict; a child that ended or whose cancel was requested gets nothing.
 * Admission and the child's runtime then cancel it like any run.
 */
export async function cancelChildren(
  host: ChildRunHost,
  stepOf: (id: string) => Step | undefined,
  done: ReadonlySet<string>,
): Promise<void> {
  const { port } = host;
  for (const [stepId, { childRunId }] of host.children) {
    const step = stepOf(stepId);
    if (done.has(stepId) || step?.kind !== "run" || step.onParentCancel === "abandon") continue;
    try {
      await requestChildCancel(host, childRunId);
    } catch (e) {
      // The parent still ends cancelled; the child is then left running (logged, never silent).
      port.log?.({ event: "child-cancel-failed", childRunId, detail: (e as Error).message });
    }
  }
}

async function requestChildCancel(host: ChildRunHost, childRunId: string): Promise<void> {
  const { opened, port } = host;
  const ref = runRef(opened.tenantId, childRunId);
  for (let attempt = 1; attempt <= 5; attempt++) {
    const history = await port.store.read(ref);
    const s = foldRun(history.events);
    if (s.status === "none" || isTerminal(s.status) || s.cancelRequested) return;
    const event = {
      ...opened.emit("run.cancel-requested", {
        by: `run:${opened.run.ref.id}`,
        reason: `parent run ${opened.run.ref.id} was cancelled`,
      }),
      correlationId: childRunId,
    } as DroverEvent;
    try {
      await port.store.append(ref, event, {
        expectedSeq: history.lastSeq,
        msgId: `${aggregateSubject(port.layout, ref)}:${event.eventId}`,
      });
      return;
    } catch (e) {
      // The child moved meanwhile: read it again and decide again.
      if (!isDroverError(e, "version-conflict")) throw e;
    }
  }
}
