import { setTimeout as delay } from "node:timers/promises";
import { foldRun, isTerminal, type RunState } from "../../../aggregates/run.ts";
import {
  canonicalSize,
  childRunKey,
  DroverError,
  resolveRefs,
  RUN_INPUT_MAX_BYTES,
  type SharedRunId,
  type Step,
} from "../../../contracts/index.ts";
import { submissionIds } from "../../../platform/submission-ids.ts";
import type { OutputStore } from "../../../platform/output-store.ts";
import { runRef } from "../../../streams/subjects.ts";
import type { EventStore } from "../../../streams/types.ts";
import type { OpenedExecution } from "./execution-open.ts";
import { UNANSWERED_READ_DELAYS_MS, untilAnswered } from "./unanswered-read.ts";
import { recordedOutput } from "./step-output.ts";
import type { StepRunner } from "./step-runners.ts";

type RunStep = Extract<Step, { kind: "run" }>;

/** What a run step needs from its runtime: the event store (the child's run subject) and its outputs. */
export interface ChildRunPort {
  readonly store: EventStore;
  readonly outputs?: OutputStore;
  /** How often a waiting run step looks at its child run (default 250 ms). */
  readonly pollMs?: number;
  /** Delays before a child run is read again after a read nobody answered; the last repeats (default UNANSWERED_READ_DELAYS_MS). */
  readonly unansweredReadDelaysMs?: readonly number[];
  /** The runtime's log: a read nobody answered is said there (`child-read-unanswered`). */
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
 * run id and the child's input (the step's params, `$ref`s resolved), appended conditionally like
 * every exec append, unless the journal already holds it (a resumed execution). The runtime writes
 * no `run.submitted`: admission reads the decision from the journal and submits the child.
 * Returns the child run id.
 */
export async function childRunDecision(
  host: ChildRunHost,
  step: RunStep,
  attempt: number,
  data: { readonly input: unknown; readonly outputs: ReadonlyMap<string, unknown> },
): Promise<SharedRunId> {
  const known = host.children.get(step.id);
  const childRunId = idsOf(host, step.id, attempt).sharedRunId as SharedRunId;
  if (known?.attempt === attempt) return childRunId;
  let input: unknown;
  try {
    input = resolveRefs(step.params, data, () => {
      throw new Error("a run step's params hold no $secret");
    });
  } catch (e) {
    throw new DroverError("reference-unresolved", `step ${step.id}: ${(e as Error).message}`, { retryable: false });
  }
  const { opened } = host;
  if (input !== undefined && canonicalSize(input) > RUN_INPUT_MAX_BYTES)
    throw new DroverError(
      "contract-violation",
      `step ${step.id}: the child run's input is larger than ${RUN_INPUT_MAX_BYTES} bytes of JSON`,
      { retryable: false },
    );
  const decision = { stepId: step.id, attempt, childRunId, ...(input === undefined ? {} : { input: input as never }) };
  await opened.exec.append(opened.emit("exec.child-run-submitted", decision));
  host.children.set(step.id, { attempt, childRunId });
  return childRunId;
}

/**
 * One attempt of a run step: journals the decision (above), then waits, holding no worker, until
 * admission has submitted the child and the child ends. Completes with the child's output; a
 * failed, cancelled or rejected child fails the attempt with `child-run-failed` naming it.
 */
export async function runChild(
  host: ChildRunHost,
  step: RunStep,
  attempt: number,
  data: { readonly input: unknown; readonly outputs: ReadonlyMap<string, unknown> },
  signal: AbortSignal,
): Promise<unknown> {
  const childRunId = await childRunDecision(host, step, attempt, data);
  const ref = runRef(host.opened.tenantId, childRunId);
  let state = foldRun((await readAnswered(host, step.id, childRunId, signal)).events);
  for (;;) {
    if (isTerminal(state.status)) return ended(host, state, step.id, childRunId, signal);
    const seq = state.lastSeq;
    // A read that fails (NATS briefly away) counts as "not moved": the step keeps waiting, it does not fail.
    const moved = () =>
      host.port.store.lastSeq(ref).then(
        (at) => at !== seq,
        () => false,
      );
    while (!(await moved())) await delay(host.port.pollMs ?? 250, undefined, { signal });
    state = foldRun((await readAnswered(host, step.id, childRunId, signal)).events);
  }
}

/**
 * The child run's history, read again until it is answered: a read nobody answered
 * (`event-store-unavailable`, retryable: no history responder while the provisioner restarts, NATS
 * down) is an outage the step outlasts, as a wait does (wait-steps.ts), not a failure of its
 * attempt. A refused read still fails it. Rejects when `signal` aborts.
 */
function readAnswered(host: ChildRunHost, stepId: string, childRunId: string, signal: AbortSignal) {
  return untilAnswered(
    () => host.port.store.read(runRef(host.opened.tenantId, childRunId)),
    host.port.unansweredReadDelaysMs ?? UNANSWERED_READ_DELAYS_MS,
    signal,
    (u) =>
      host.port.log?.({
        event: "child-read-unanswered",
        executionId: host.opened.executionId,
        stepId,
        childRunId,
        ...u,
      }),
  );
}

async function ended(
  host: ChildRunHost,
  s: RunState,
  stepId: string,
  childRunId: string,
  signal: AbortSignal,
): Promise<unknown> {
  if (s.status === "completed") {
    const ref = s.output?.ref;
    return recordedOutput({ output: s.output?.inline ?? null, ...(ref ? { outputRef: ref } : {}) }, host.port.outputs);
  }
  const why = (await readAnswered(host, stepId, childRunId, signal)).events.findLast(
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
