import type { EventDraft, RuntimeFailureIncidentId, RuntimeInstanceId, TenantId } from "../../../contracts/index.ts";
import { forensicsIdOf, type RecoveryItem } from "./classify.ts";

/** Event bodies of one aggregate within a recovery transition. */
export interface AggregateEvents {
  readonly aggregate: "run" | "exec" | "forensics";
  readonly tenantId: TenantId;
  readonly id: string;
  /** 0 for a forensics record (it must not exist yet: a re-run conflicts instead of duplicating). */
  readonly expectedSeq: number;
  readonly events: readonly EventDraft[];
}

export interface TransitionContext {
  readonly incidentId: RuntimeFailureIncidentId;
  readonly failedRuntimeInstanceId: RuntimeInstanceId;
  /** For in-flight items: the execution journal's last sequence and current epoch. */
  readonly exec?: {
    readonly lastSeq: number;
    readonly epoch: number;
    readonly completedSteps: number;
    /** The journal ended (its host died before the run's own terminal event): nothing may follow it. */
    readonly terminal?: boolean;
  };
  /**
   * Set when this crash is one more than the tenant allows (see crash-loop.ts): the execution is
   * paused (fencing its last owner) and the run fails with `crash-loop` instead of being resumed.
   */
  readonly crashLoop?: { readonly crashes: number; readonly limit: number; readonly incidents: readonly string[] };
}

/**
 * The atomic transition for one recovered item (recovery.md table), as one batch of aggregates:
 * in-flight → exec `paused-for-recovery` (new epoch; none for a journal that already ended) + run
 * `requeued-for-resume` + forensics;
 * local-queued → run `requeued-for-local-queued-recovery` + forensics. Pure; the shell commits it
 * with one JetStream atomic batch so either every fact lands or none does.
 */
export function recoveryTransition(item: RecoveryItem, ctx: TransitionContext): AggregateEvents[] {
  const common = commonOf(item, ctx);
  const forensicsId = common.forensicsId;
  if (item.class === "in-flight-execution") {
    if (!ctx.exec || !item.executionId)
      throw new Error(`in-flight item ${forensicsId} needs its execution's journal state`);
    const newEpoch = ctx.exec.epoch + 1;
    const paused = {
      forensicsId,
      incidentId: ctx.incidentId,
      failedRuntimeInstanceId: ctx.failedRuntimeInstanceId,
      newEpoch,
    };
    const requeued = {
      forensicsId,
      incidentId: ctx.incidentId,
      executionId: item.executionId,
      failedRuntimeInstanceId: ctx.failedRuntimeInstanceId,
      failedLocalRunId: item.localRunId,
      newEpoch,
    };
    // An ended journal takes no pause (nothing follows a terminal event): the run alone moves to the
    // next epoch, and the runtime that resumes it writes only the run's terminal event from the journal.
    // An empty journal (its host died between the run's `started` and the journal's first event)
    // has nothing to pause either: the resume at the new epoch writes its `started`.
    const pause: AggregateEvents[] =
      ctx.exec.terminal || ctx.exec.lastSeq === 0
        ? []
        : [
            {
              aggregate: "exec",
              tenantId: item.tenantId,
              id: item.executionId,
              expectedSeq: ctx.exec.lastSeq,
              events: [{ type: "exec.paused-for-recovery", data: paused }],
            },
          ];
    if (ctx.crashLoop && !ctx.exec.terminal) return crashLoopTransition(item, ctx, pause, common);
    return [
      ...pause,
      {
        aggregate: "run",
        tenantId: item.tenantId,
        id: item.sharedRunId,
        expectedSeq: item.runSeq,
        events: [{ type: "run.requeued-for-resume", data: requeued }],
      },
      {
        aggregate: "forensics",
        tenantId: item.tenantId,
        id: forensicsId,
        expectedSeq: 0,
        events: [
          {
            type: "forensics.execution-recovery-candidate-detected",
            data: { ...common, completedSteps: ctx.exec.completedSteps },
          },
          { type: "forensics.failed-local-run-marked-requeued-for-recovery", data: common },
          { type: "forensics.shared-run-requeued-for-resume", data: { ...common, newEpoch } },
        ],
      },
    ];
  }
  const requeued = {
    forensicsId,
    incidentId: ctx.incidentId,
    failedRuntimeInstanceId: ctx.failedRuntimeInstanceId,
    failedLocalRunId: item.localRunId,
  };
  return [
    {
      aggregate: "run",
      tenantId: item.tenantId,
      id: item.sharedRunId,
      expectedSeq: item.runSeq,
      events: [{ type: "run.requeued-for-local-queued-recovery", data: requeued }],
    },
    {
      aggregate: "forensics",
      tenantId: item.tenantId,
      id: forensicsId,
      expectedSeq: 0,
      events: [
        { type: "forensics.execution-recovery-candidate-detected", data: common },
        { type: "forensics.failed-local-run-marked-requeued-for-recovery", data: common },
        { type: "forensics.shared-run-requeued-for-local-queued-recovery", data: common },
      ],
    },
  ];
}

/** In-flight, one crash too many: pause (fences the last owner), run `failed` with crash-loop, forensics says so. */
function crashLoopTransition(
  item: RecoveryItem,
  ctx: TransitionContext,
  pause: AggregateEvents[],
  common: ReturnType<typeof commonOf>,
): AggregateEvents[] {
  const { crashes, limit, incidents } = ctx.crashLoop!;
  const reason = {
    code: "crash-loop" as const,
    detail:
      `execution ${item.executionId} crashed its runtime ${crashes} times (incidents ${incidents.join(", ")}); maxCrashRecoveries is ${limit}, so it is not resumed again`.slice(
        0,
        2000,
      ),
  };
  return [
    ...pause,
    {
      aggregate: "run",
      tenantId: item.tenantId,
      id: item.sharedRunId,
      expectedSeq: item.runSeq,
      events: [{ type: "run.failed", data: { executionId: item.executionId, localRunId: item.localRunId, reason } }],
    },
    {
      aggregate: "forensics",
      tenantId: item.tenantId,
      id: common.forensicsId,
      expectedSeq: 0,
      events: [
        {
          type: "forensics.execution-recovery-candidate-detected",
          data: { ...common, completedSteps: ctx.exec?.completedSteps ?? 0 },
        },
        { type: "forensics.execution-recovery-completed", data: { ...common, outcome: "failed" } },
      ],
    },
  ];
}

/** The facts every forensics event of one item repeats. */
function commonOf(item: RecoveryItem, ctx: TransitionContext) {
  return {
    forensicsId: forensicsIdOf(item),
    incidentId: ctx.incidentId,
    class: item.class,
    sharedRunId: item.sharedRunId,
    failedRuntimeInstanceId: ctx.failedRuntimeInstanceId,
    failedLocalRunId: item.localRunId,
    ...(item.executionId ? { executionId: item.executionId } : {}),
  };
}
