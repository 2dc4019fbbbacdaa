import type { DroverEvent } from "../../../contracts/index.ts";
import type { StepDoc } from "../../../contracts/read-models.ts";
import type { Fact } from "./fact.ts";

type StepCompleted = Extract<DroverEvent, { type: "exec.step-completed" }>;

/** The `steps` key: one document per (tenant, execution, step). */
export const stepDocId = (tenantId: string, executionId: string, stepId: string): string =>
  `${tenantId}:${executionId}:${stepId}`;

/**
 * The step's completion as the document to insert. Only the first insert of a key succeeds: it
 * is the completion downstream steps used; a later `step-completed` of the same step (a duplicate)
 * leaves it as it is. Pure.
 */
export function stepCompletion(f: Fact<StepCompleted>): StepDoc {
  const e = f.event;
  return {
    _id: stepDocId(e.tenantId, f.aggregateId, e.data.stepId),
    tenantId: e.tenantId,
    executionId: f.aggregateId,
    stepId: e.data.stepId,
    attempt: e.data.attempt,
    completedSeq: f.seq,
    outputDigest: e.data.outputDigest,
    durationMs: e.data.durationMs,
    ...(e.writer.epoch !== undefined ? { epoch: e.writer.epoch } : {}),
  };
}
