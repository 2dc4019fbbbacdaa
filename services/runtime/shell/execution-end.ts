import {
  ERROR_CATALOGUE,
  isDroverError,
  type DroverError,
  type DagDefinition,
  type DataOf,
  type ErrorCode,
  type StepId,
} from "../../../contracts/index.ts";
import { assertNever } from "../../../contracts/assert-never.ts";
import { RUN_REQUESTS } from "../../../aggregates/run.ts";
import type { OutputStore } from "../../../platform/output-store.ts";
import type { EndedEvent, OpenedExecution } from "./execution-open.ts";
import type { ExecutionOutcome } from "./execution.ts";
import { recordableOutput } from "./step-output.ts";
import { storeFailureOf } from "./store-failure.ts";

/** What the run's terminal writes need from an execution. */
export interface EndCtx {
  readonly opened: OpenedExecution;
  readonly dag: DagDefinition;
  readonly outputs?: OutputStore;
  readonly log: (fields: Record<string, unknown>) => void;
  /** A settled step's output value (null for a skipped one). */
  readonly valueOf: (stepId: string) => Promise<unknown>;
}

/** Run-aggregate terminal events: a conflict here (the run moved, e.g. cancelled by the API) is logged, not fatal. */
export async function appendRun<T extends "run.completed" | "run.failed" | "run.cancelled">(
  c: EndCtx,
  type: T,
  data: DataOf<T>,
): Promise<void> {
  try {
    await c.opened.run.append(c.opened.emit(type, data), RUN_REQUESTS);
  } catch (e) {
    if (!isDroverError(e, "execution-ownership-lost")) throw e;
    c.log({ event: "run-terminal-conflict", executionId: c.opened.executionId, type, detail: e.message });
  }
}

/**
 * The run's output: its sink step's output, or `{ stepId: output }` over several sinks (steps no
 * other step depends on; a skipped one's is null), stored like a step output when it is above the
 * inline limit.
 */
export async function runOutput(c: EndCtx) {
  const dependedOn = new Set(c.dag.steps.flatMap((s) => s.dependsOn as string[]));
  const sinks = c.dag.steps.filter((s) => !dependedOn.has(s.id)).map((s) => s.id as string);
  const value =
    sinks.length === 1
      ? await c.valueOf(sinks[0]!)
      : Object.fromEntries(await Promise.all(sinks.map(async (id) => [id, await c.valueOf(id)] as const)));
  return recordableOutput(value, `${c.opened.tenantId}/${c.opened.executionId}/run-output`, c.outputs, undefined);
}

/** The run's `completed` with the execution's output digest and the run output (inline or stored). */
export async function runCompleted(
  c: EndCtx,
  outputDigest: string,
  result: Awaited<ReturnType<typeof runOutput>>,
): Promise<ExecutionOutcome> {
  await appendRun(c, "run.completed", {
    executionId: c.opened.executionId,
    localRunId: c.opened.localRunId,
    outputDigest,
    ...(result.outputRef ? { outputRef: result.outputRef } : { output: result.output }),
  });
  return { state: "completed" };
}

/**
 * The journal ended before its run did (the host died between exec and run terminal events): write
 * the run's terminal event from the journal, runs nothing. The output digest is the one the journal
 * recorded; the output is rebuilt from the recorded step outputs, as a completing run builds it.
 */
export async function finishFromJournal(c: EndCtx, ended: EndedEvent): Promise<ExecutionOutcome> {
  c.log({ event: "run-finished-from-journal", executionId: c.opened.executionId, journal: ended.type });
  switch (ended.type) {
    case "exec.completed":
      return runCompleted(c, ended.data.outputDigest, await runOutput(c));
    case "exec.failed":
      await appendRun(c, "run.failed", {
        executionId: c.opened.executionId,
        localRunId: c.opened.localRunId,
        reason: ended.data.reason,
      });
      return { state: "failed", reason: ended.data.reason.code, detail: ended.data.reason.detail };
    case "exec.cancelled":
      await appendRun(c, "run.cancelled", { reason: ended.data.reason });
      return { state: "cancelled" };
    default:
      return assertNever(ended);
  }
}

type FailReason = DataOf<"exec.failed">["reason"];

/** The execution's and the run's `failed`, blaming `stepId` when a step's failure ended it. */
export async function failRun(c: EndCtx, reason: FailReason, stepId?: StepId): Promise<ExecutionOutcome> {
  await c.opened.exec.append(c.opened.emit("exec.failed", { reason, ...(stepId ? { stepId } : {}) }));
  await appendRun(c, "run.failed", { executionId: c.opened.executionId, localRunId: c.opened.localRunId, reason });
  return { state: "failed", reason: reason.code, detail: reason.detail };
}

/**
 * Why a step's failure ended the run: a failure that no retry could help names its own code
 * (`condition-error`, `map-too-large`, …); a spent retry budget is `step-attempts-exhausted`.
 */
export function stepFailureReason(
  stepId: StepId,
  attempt: number,
  last: { readonly code?: ErrorCode; readonly message: string } | undefined,
): FailReason {
  const final = last?.code !== undefined && !ERROR_CATALOGUE[last.code].retryable;
  return {
    code: final ? last!.code! : "step-attempts-exhausted",
    detail:
      `step ${stepId} failed attempt ${attempt}${last ? `: ${last.code ? `(${last.code}) ` : ""}${last.message}` : ""}`.slice(
        0,
        2000,
      ),
  };
}

const ENDED = new Set(["exec.completed", "exec.failed", "exec.cancelled"]);

/**
 * An error no step owns stopped the execution's loop (e.g. the output store refused a map's fan-in
 * output). The runtime still owns the execution, so it journals the failure (`exec.failed`,
 * `run.failed`) instead of leaving the run `started` with nobody running it; unless the journal
 * already ended (a second, different end is never written). A failure to journal it is logged.
 */
export async function failUnexpectedly(c: EndCtx, err: DroverError): Promise<ExecutionOutcome> {
  const detail = err.message.slice(0, 2000);
  c.log({ event: "execution-failed-unexpectedly", executionId: c.opened.executionId, code: err.code, detail });
  const last = c.opened.exec.lastType;
  if (c.opened.ended || (last !== undefined && ENDED.has(last))) return { state: "failed", reason: err.code, detail };
  try {
    return await failRun(c, { code: err.code, detail });
  } catch (e) {
    const why = storeFailureOf(e);
    c.log({
      event: "execution-end-unrecorded",
      executionId: c.opened.executionId,
      code: why.code,
      detail: why.message,
    });
    return { state: "failed", reason: err.code, detail };
  }
}
