import type { DagDefinition, DroverEvent, Step } from "../../contracts/index.ts";
import {
  evolveExecution,
  initialExecutionState,
  isExecEvent,
  type ExecEvent,
  type ExecutionState,
  type SequencedEvent,
} from "../execution.ts";
import { scheduleSteps, type ScheduleDecision } from "../scheduler.ts";
import { assertNever } from "../../contracts/assert-never.ts";
import { canonicalJson } from "../step-inputs.ts";
import { rederivationProblem } from "./output-rederivation.ts";
import { conditionGate, controlProblem, offerControl } from "./condition-invariants.ts";
import { mapExpandedProblem, mapOutputProblem, offerMaps, stepFor, unexpandedItem } from "./map-invariants.ts";
import { cacheHitProblem } from "./cache-invariants.ts";
import { childRunProblem } from "./child-run-invariants.ts";
import { waitProblem } from "./wait-invariants.ts";
import { diverged, match, type Divergence, type ValidationResult } from "./result.ts";

export interface ExecutionReplay {
  readonly executionId: string;
  /** The execution's journal in stream order (events of other aggregates are ignored). */
  readonly journal: readonly SequencedEvent[];
  /** The DAG from the run's `submitted` event. */
  readonly dag: Pick<DagDefinition, "steps">;
  /**
   * sha256 hex of a string. Optional because hashing is the caller's (domain code does no crypto);
   * when given, the DAG digest in `exec.started` and every deterministic step output are re-derived.
   */
  readonly digest?: (s: string) => string;
  /** Texts of object-store outputs by object name (see rederivationProblem); absent: refs are checked without their bytes. */
  readonly storedOutputs?: ReadonlyMap<string, string>;
  /** The run input from its `submitted` event; when given, journaled conditions are re-evaluated. */
  readonly input?: { readonly value: unknown };
}

type Check = Omit<Divergence, "scope"> | undefined;
const key = (stepId: string, attempt: number): string => `${stepId}#${attempt}`;

/**
 * Replays one execution's journal and checks, event by event in stream order: it starts with
 * `exec.started` (with this DAG's digest); a step completes only after every dependency completed;
 * exactly one `step-completed` per step; after a `paused-for-recovery` every write carries the new
 * epoch (and before it, the owner's); each recorded attempt is one the scheduler, re-run over the
 * recorded outputs, chose; `completed`/`failed` are the scheduler's decisions; nothing follows a
 * terminal event. Returns `match` or the first divergence with its stream sequence. Pure, never
 * throws; an in-flight (unfinished) journal can match.
 */
export function validateExecution(input: ExecutionReplay): ValidationResult {
  const scope = `execution ${input.executionId}`;
  const byId = new Map(input.dag.steps.map((s) => [s.id as string, s]));
  const firstCompletion = new Map<string, number>();
  for (const { seq, event } of input.journal)
    if (event.type === "exec.step-completed" && !firstCompletion.has(event.data.stepId))
      firstCompletion.set(event.data.stepId, seq);
  let state = initialExecutionState();
  // Every (step, attempt) the scheduler would have started at some point: steps run in parallel,
  // so an outcome may land after its siblings changed the decision it was started under.
  const offered = new Set<string>();
  let decision: ScheduleDecision = { kind: "continue", start: [] };
  let pausedAt: number | undefined;
  let checked = 0;
  for (const e of input.journal) {
    if (!isExecEvent(e.event)) continue;
    checked += 1;
    const found = checkEvent(e.seq, e.event, { input, byId, firstCompletion, state, offered, decision, pausedAt });
    if (found) return diverged(scope, checked, found);
    const next = evolveExecution(state, e);
    if (next.violations.length > state.violations.length)
      return diverged(scope, checked, { invariant: "journal-fold", seq: e.seq, message: next.violations.at(-1) ?? "" });
    if (e.event.type === "exec.paused-for-recovery") pausedAt = e.seq;
    state = next;
    decision = decide(input.dag, state);
    if (decision.kind === "continue") for (const s of decision.start) offered.add(key(s.stepId, s.attempt));
    offerControl(offered, decision);
    offerMaps(offered, decision, key);
  }
  if (checked === 0) return match(scope, 0, [`no journal for ${input.executionId}`]);
  return match(scope, checked, state.terminal ? [] : [`execution ${input.executionId} is in flight (not finished)`]);
}

/** The scheduler with no local facts: nothing running, no parallelism cap, every retry time reached (writer clocks are not order). */
const decide = (dag: Pick<DagDefinition, "steps">, s: ExecutionState): ScheduleDecision =>
  scheduleSteps(
    dag,
    {
      completed: new Set(s.completed.keys()),
      failures: s.failures,
      running: new Set(),
      skipped: new Set(s.skipped.keys()),
      conditions: s.conditions,
      maps: s.maps,
    },
    Number.POSITIVE_INFINITY,
    Number.POSITIVE_INFINITY,
  );

interface Ctx {
  readonly input: ExecutionReplay;
  readonly byId: ReadonlyMap<string, Step>;
  readonly firstCompletion: ReadonlyMap<string, number>;
  readonly state: ExecutionState;
  readonly offered: ReadonlySet<string>;
  readonly decision: ScheduleDecision;
  readonly pausedAt: number | undefined;
}

function checkEvent(seq: number, event: ExecEvent, c: Ctx): Check {
  const { state } = c;
  if (!state.started && event.type !== "exec.started")
    return { invariant: "exec-not-started", seq, message: `${event.type} at seq ${seq} before any exec.started` };
  if (state.terminal)
    return {
      invariant: "write-after-terminal",
      seq,
      message: `${event.type} at seq ${seq} after the execution was ${state.terminal}`,
    };
  return epochProblem(seq, event, c) ?? eventProblem(seq, event, c);
}

function epochProblem(seq: number, event: ExecEvent, { state, pausedAt }: Ctx): Check {
  // paused-for-recovery is recovery's own write: it is what moves the epoch.
  if (event.type === "exec.paused-for-recovery") {
    if (event.data.newEpoch > state.epoch) return undefined;
    return {
      invariant: "stale-epoch",
      seq,
      message: `paused-for-recovery at seq ${seq} sets epoch ${event.data.newEpoch}, not above the current epoch ${state.epoch}`,
    };
  }
  const owner = event.type === "exec.started" ? event.data.epoch : state.epoch;
  const epoch = event.writer.epoch;
  if (pausedAt === undefined ? epoch === undefined || epoch === owner : epoch === owner) return undefined;
  const who = event.writer.runtimeInstanceId ?? `${event.writer.service}/${event.writer.instanceId}`;
  const since =
    pausedAt === undefined ? "" : ` after paused-for-recovery at seq ${pausedAt} moved ownership to epoch ${owner}`;
  return {
    invariant: "stale-epoch",
    seq,
    message: `${label(event)} at seq ${seq} written by ${who} (${event.writer.hostIncarnation ?? "no incarnation"}) at epoch ${epoch ?? "none"}${since}; the owner epoch is ${owner}`,
  };
}

function eventProblem(seq: number, event: ExecEvent, c: Ctx): Check {
  switch (event.type) {
    case "exec.started": {
      const want = c.input.digest?.(canonicalJson(c.input.dag));
      if (want === undefined || want === event.data.dagDigest) return undefined;
      return {
        invariant: "dag-digest",
        seq,
        message: `exec.started at seq ${seq} names DAG digest ${event.data.dagDigest}, the run's submitted DAG has ${want}`,
      };
    }
    case "exec.step-completed":
    case "exec.step-failed":
    case "exec.timer-started":
      return stepProblem(seq, event, c);
    case "exec.condition-evaluated":
    case "exec.step-skipped": {
      const step = c.byId.get(event.data.stepId);
      if (!step) return unknownStep(seq, event.type, event.data.stepId);
      return controlProblem(seq, event, step, controlCtx(c));
    }
    case "exec.map-expanded": {
      const step = c.byId.get(event.data.stepId);
      if (!step) return unknownStep(seq, event.type, event.data.stepId);
      return mapExpandedProblem(seq, event, step, {
        ...controlCtx(c),
        ...(c.input.digest ? { digest: c.input.digest } : {}),
      });
    }
    case "exec.completed": {
      if (c.decision.kind === "completed") return undefined;
      const missing = c.input.dag.steps
        .map((s) => s.id as string)
        .filter((id) => !c.state.completed.has(id) && !c.state.skipped.has(id));
      return {
        invariant: "scheduler-divergence",
        seq,
        message: `exec.completed at seq ${seq} while steps ${missing.join(", ")} have not completed`,
      };
    }
    case "exec.failed":
      if (event.data.stepId === undefined || (c.decision.kind === "failed" && c.decision.stepId === event.data.stepId))
        return undefined;
      return {
        invariant: "scheduler-divergence",
        seq,
        message: `exec.failed at seq ${seq} blames step ${event.data.stepId}, but the scheduler re-run over the journal decides ${summarize(c.decision)}`,
      };
    case "exec.step-reused":
      return reuseProblem(seq, event, c);
    case "exec.child-run-submitted":
      return childRunProblem(seq, event, { ...c, executionId: c.input.executionId });
    case "exec.wait-opened":
    case "exec.wait-resolved":
      return waitProblem(seq, event, c.byId.get(event.data.stepId));
    case "exec.paused-for-recovery":
    case "exec.resumed":
    case "exec.cancelled":
      return undefined;
    default:
      return assertNever(event);
  }
}

/**
 * A fork's reused step: in the DAG, written before this journal executed or settled any step (the
 * runtime writes every reuse right after exec.started or resumed), and its digest is the digest of
 * what it carries. Whether the original journal holds that output is checked against the original
 * run (the runtime checks it before writing), not here. A step cache hit (with `cache`) instead
 * comes when the step would start (cacheHitProblem).
 */
function reuseProblem(seq: number, event: Extract<ExecEvent, { type: "exec.step-reused" }>, c: Ctx): Check {
  const { stepId, cache } = event.data;
  const step = c.byId.get(stepId);
  if (!step) return unknownStep(seq, event.type, stepId);
  if (cache)
    return (
      cacheHitProblem(seq, event.occurredAt, { ...event.data, cache }, step, c.state, c.offered) ??
      reusedDigestProblem(seq, event, c)
    );
  const executed = [...c.state.completed].find(([, done]) => done.reusedFrom === undefined)?.[0];
  const failed = [...c.state.failures.keys()][0];
  if (executed !== undefined || failed !== undefined)
    return {
      invariant: "scheduler-divergence",
      seq,
      message: `exec.step-reused ${stepId} at seq ${seq} after step ${executed ?? failed} already ran in this execution`,
    };
  return reusedDigestProblem(seq, event, c);
}

/** The reused output's digest is the digest of what the event carries (a stored one: its ref's). */
function reusedDigestProblem(seq: number, event: Extract<ExecEvent, { type: "exec.step-reused" }>, c: Ctx): Check {
  const { stepId } = event.data;
  if (!c.input.digest) return undefined;
  const { output, outputRef, outputDigest } = event.data;
  const got = outputRef ? outputRef.digest : c.input.digest(canonicalJson(output));
  if (got === outputDigest) return undefined;
  return {
    invariant: "output-rederivation",
    seq,
    message: `step ${stepId} at seq ${seq}: reused outputDigest ${outputDigest} is not the digest of the reused output (${got})`,
  };
}

function stepProblem(
  seq: number,
  event: Extract<ExecEvent, { type: "exec.step-completed" | "exec.step-failed" | "exec.timer-started" }>,
  c: Ctx,
): Check {
  const { stepId, attempt } = event.data;
  const step = stepFor(c.byId, c.state, stepId);
  if (!step) {
    const item = unexpandedItem(c.byId, c.state, stepId);
    return {
      invariant: item ? "scheduler-divergence" : "unknown-step",
      seq,
      message: `${label(event)} at seq ${seq}: step ${stepId} is ${item ?? "not in the run's DAG"}`,
    };
  }
  if (event.type === "exec.timer-started" && step.kind !== "sleep") {
    return {
      invariant: "scheduler-divergence",
      seq,
      message: `${label(event)} at seq ${seq}: step ${stepId} is a ${step.kind} step; only sleep steps keep timers`,
    };
  }
  const done = c.state.completed.get(stepId);
  if (done) {
    return event.type === "exec.step-completed"
      ? {
          invariant: "duplicate-step-completed",
          seq,
          message: `second step-completed for step ${stepId} (attempt ${attempt}) at seq ${seq}; it already completed at seq ${done.seq} (attempt ${done.attempt})`,
        }
      : {
          invariant: "scheduler-divergence",
          seq,
          message: `${event.type.slice(5)} for step ${stepId} at seq ${seq} after it completed at seq ${done.seq}`,
        };
  }
  const missing = step.dependsOn.filter((d) => !c.state.completed.has(d) && !c.state.skipped.has(d));
  if (missing.length > 0) {
    const when = missing.map(
      (d) =>
        `${d} (${c.firstCompletion.has(d) ? `completed later, at seq ${c.firstCompletion.get(d)}` : "never completed"})`,
    );
    return {
      invariant: "dependency-order",
      seq,
      message: `step ${stepId} ${event.type === "exec.step-completed" ? "completed" : "ran"} at seq ${seq} before its dependency ${when.join(", ")}`,
    };
  }
  const gate = conditionGate(seq, event, step, controlCtx(c));
  if (gate === "accepted") return undefined;
  if (gate) return gate;
  // A step never runs beside itself: its attempts continue one by one from the journal.
  const latest = c.state.failures.get(stepId)?.attempt ?? 0;
  if (attempt !== latest + 1) {
    return {
      invariant: "scheduler-divergence",
      seq,
      message: `${label(event)} at seq ${seq}: the journal's latest attempt of ${stepId} is ${latest}, so the scheduler would run attempt ${latest + 1}`,
    };
  }
  if (!c.offered.has(key(stepId, attempt))) {
    return {
      invariant: "scheduler-divergence",
      seq,
      message: `${label(event)} at seq ${seq}: the scheduler re-run over the recorded outputs never chose attempt ${attempt} of ${stepId}; it decides ${summarize(c.decision)}`,
    };
  }
  if (event.type !== "exec.step-completed" || !c.input.digest) return undefined;
  const problem = step.map
    ? mapOutputProblem(step, event.data, c.state, c.input.digest, c.input.storedOutputs)
    : rederivationProblem(step, event.data, c.state, c.input.digest, c.input.storedOutputs);
  return problem === undefined
    ? undefined
    : { invariant: "output-rederivation", seq, message: `step ${stepId} at seq ${seq}: ${problem}` };
}

const controlCtx = (c: Ctx) => ({
  state: c.state,
  offered: c.offered,
  ...(c.input.input ? { input: c.input.input } : {}),
  ...(c.input.storedOutputs ? { storedOutputs: c.input.storedOutputs } : {}),
});

const label = (e: DroverEvent): string => {
  const d = e.data as { stepId?: unknown; attempt?: unknown };
  return typeof d.stepId === "string" ? `${e.type} ${d.stepId}#${String(d.attempt)}` : e.type;
};

function summarize(d: ScheduleDecision): string {
  switch (d.kind) {
    case "completed":
      return "completed";
    case "failed":
      return `failed (step ${d.stepId} spent its ${d.attempt} attempts)`;
    case "continue":
      return d.start.length === 0
        ? "nothing to start"
        : `start ${d.start.map((s) => key(s.stepId, s.attempt)).join(", ")}`;
    default:
      return assertNever(d);
  }
}

/** An exec event naming a step the run's DAG does not have. */
function unknownStep(seq: number, type: string, stepId: string): Check {
  return { invariant: "unknown-step", seq, message: `${type} at seq ${seq}: step ${stepId} is not in the run's DAG` };
}
