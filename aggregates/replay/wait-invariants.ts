import type { DroverEvent, Step } from "../../contracts/index.ts";
import type { Divergence } from "./result.ts";

type Check = Omit<Divergence, "scope"> | undefined;
type WaitEvent = Extract<DroverEvent, { type: "exec.wait-opened" | "exec.wait-resolved" }>;

/**
 * A wait's journaled opening or resolution (docs/control-flow.md "Waits") must name a `wait` step of
 * the run's DAG by its signal name, and a resolution by signal must carry the verified principal and
 * payload digest. Order (opened once, resolved once after it) is the fold's (`journal-fold`).
 */
export function waitProblem(seq: number, event: WaitEvent, step: Step | undefined): Check {
  const { stepId, name } = event.data;
  if (!step)
    return {
      invariant: "unknown-step",
      seq,
      message: `${event.type} at seq ${seq}: step ${stepId} is not in the run's DAG`,
    };
  if (step.kind !== "wait" || step.params.name !== name)
    return {
      invariant: "scheduler-divergence",
      seq,
      message: `${event.type} at seq ${seq}: step ${stepId} is ${step.kind === "wait" ? `the wait "${step.params.name}"` : `a ${step.kind} step`}, not the wait "${name}"`,
    };
  if (
    event.type === "exec.wait-resolved" &&
    event.data.by === "signal" &&
    (!event.data.principal || !event.data.payloadDigest)
  )
    return {
      invariant: "scheduler-divergence",
      seq,
      message: `exec.wait-resolved at seq ${seq}: wait ${stepId} resolved by a signal with no principal or payload digest`,
    };
  return undefined;
}
