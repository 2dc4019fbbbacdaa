import {
  DroverError,
  isDroverError,
  isErrorCode,
  type LocalRunId,
  type Reason,
  type RuntimeCommand,
} from "../../../contracts/index.ts";
import { appendRunDecision } from "./append-run.ts";
import type { Placeable } from "./candidates.ts";
import type { AdmissionDeps } from "./deps.ts";
import type { IndexedRun } from "./run-index.ts";

type Target = Pick<Placeable, "runtimeInstanceId" | "endpoint" | "transport" | "hostIncarnation">;

/** A tenant quota claim the send confirms at the run's `admitted` (tenant-quota.ts), made at `now`. */
export interface ClaimToConfirm {
  readonly seq: number;
  readonly now: number;
}

/**
 * Records `dispatched` (the intent, before the side effect) and returns the send: DispatchRun — or
 * ResumeExecution for a run requeued for resume — over the runtime's transport with the routing
 * header and the instance token, resolving true when the runtime accepted the run. The runtime must
 * answer as the targeted instance. On failure the run gets `dispatch-failed` with a structured
 * reason and its reservation is released, so the next pass places it again. Undefined when there is
 * nothing to send (no placement, another decider moved the run, or no endpoint: `dispatch-failed`).
 * Admission runs the send outside its pass, so a slow runtime holds up only its own run.
 * With `claim`, the send confirms the tenant's quota claim once the runtime answered (or failed to),
 * with the slot's extend in one Redis call when it accepted; without a send (undefined), the caller
 * still owns the claim.
 */
export async function recordDispatch(
  deps: AdmissionDeps,
  r: IndexedRun,
  target: Target,
  claim?: ClaimToConfirm,
): Promise<(() => Promise<boolean>) | undefined> {
  const p = r.state.placement;
  if (!p) return undefined;
  const resume = r.state.resume;
  const causation = `dispatch:${p.localRunId}`;
  let dispatchedSeq = p.dispatchedSeq;
  if (dispatchedSeq === undefined) {
    if (!target.endpoint || !target.hostIncarnation) {
      await fail(deps, r, p.localRunId, {
        code: target.transport === "grpc" ? "grpc-endpoint-missing" : "http-endpoint-missing",
        detail: "no published endpoint",
      });
      return undefined;
    }
    dispatchedSeq = await appendRunDecision(
      deps,
      r,
      {
        kind: "MarkDispatched",
        data: {
          runtimeInstanceId: target.runtimeInstanceId,
          localRunId: p.localRunId,
          transport: target.transport,
          hostIncarnation: target.hostIncarnation,
          ...(resume ? { resumeExecutionId: resume.executionId } : {}),
        },
      },
      causation,
    );
    if (dispatchedSeq === undefined) return undefined;
  }
  const base = {
    sharedRunId: r.sharedRunId,
    localRunId: p.localRunId,
    tenantId: r.tenantId,
    dag: r.state.dag,
    ...(r.state.input === undefined ? {} : { input: r.state.input }),
    ...(r.state.forkedFrom === undefined ? {} : { fork: r.state.forkedFrom }),
    dispatchedSeq,
    correlationId: r.sharedRunId,
  };
  const command = (
    resume
      ? {
          operation: "ResumeExecution",
          runtimeInstanceId: target.runtimeInstanceId,
          correlationId: r.sharedRunId,
          payload: { ...base, executionId: resume.executionId, epoch: resume.epoch },
        }
      : {
          operation: "DispatchRun",
          runtimeInstanceId: target.runtimeInstanceId,
          correlationId: r.sharedRunId,
          payload: base,
        }
  ) as RuntimeCommand;
  return () => send(deps, r, p.localRunId, target, command, claim);
}

async function send(
  deps: AdmissionDeps,
  r: IndexedRun,
  localRunId: LocalRunId,
  target: Target,
  command: RuntimeCommand,
  claim?: ClaimToConfirm,
): Promise<boolean> {
  // The claim alone, when no extend goes with it (refused or unreachable): the run was admitted all the same.
  let unconfirmed = claim;
  const confirmAlone = async () => {
    const c = unconfirmed;
    unconfirmed = undefined;
    if (c) await deps.claims?.confirm(r.tenantId, r.sharedRunId, c.seq, c.now);
  };
  try {
    const result = await deps.send(
      target.endpoint!,
      target.transport,
      command,
      deps.commandTokenFor(target.runtimeInstanceId),
      deps.config.dispatchTimeoutMs,
    );
    if (result.success) {
      // Keep the slot counted until a heartbeat that shows the run (at most 3 intervals).
      const acceptedAt = acceptedBy(result) ?? deps.env.clock.now().getTime();
      const until = deps.env.clock.now().getTime() + 3 * deps.config.heartbeatIntervalMs;
      const c = unconfirmed;
      unconfirmed = undefined;
      if (c && deps.claims)
        await deps.claims.confirmAndExtend(r.tenantId, r.sharedRunId, c.seq, c.now, {
          runtimeInstanceId: target.runtimeInstanceId,
          untilMs: until,
          acceptedAt,
        });
      else await deps.reservations.extend(target.runtimeInstanceId, r.sharedRunId, until, acceptedAt);
      return true;
    }
    await confirmAlone();
    const code =
      result.failureReason && isErrorCode(result.failureReason)
        ? result.failureReason
        : "runtime-command-readiness-failed";
    return fail(deps, r, localRunId, { code, detail: result.failureDetail ?? `${command.operation} refused` });
  } catch (e) {
    const err = isDroverError(e) ? e : new DroverError("runtime-unreachable", String(e));
    deps.log.warn(
      { run: r.sharedRunId, runtime: target.runtimeInstanceId, code: err.code, err: err.message },
      "dispatch failed",
    );
    await confirmAlone();
    return fail(deps, r, localRunId, { code: err.code, detail: err.message.slice(0, 2000) });
  }
}

/**
 * From when a heartbeat of the runtime shows the run it accepted: 1 ms after the runtime built its
 * answer, on the runtime's clock (the one its beats are stamped with), so a beat taken while the
 * answer was on its way back is not counted twice with the reservation (admission's own clock at the
 * answer did: under a flood each dispatch looked like two for a beat or more, and a shared runtime
 * looked full to a quiet tenant whose kept places were free). A beat stamped in the answer's own
 * millisecond may predate the run: it still counts the reservation.
 */
const acceptedBy = (result: { timings?: { receivedAt: string; handledMs: number } }): number | undefined => {
  const answeredAt = Date.parse(result.timings?.receivedAt ?? "") + (result.timings?.handledMs ?? NaN);
  return Number.isFinite(answeredAt) ? Math.floor(answeredAt) + 1 : undefined;
};

async function fail(deps: AdmissionDeps, r: IndexedRun, localRunId: LocalRunId, reason: Reason): Promise<false> {
  const runtimeInstanceId = r.state.placement?.runtimeInstanceId;
  if (!runtimeInstanceId) return false;
  await appendRunDecision(
    deps,
    r,
    { kind: "MarkDispatchFailed", data: { runtimeInstanceId, localRunId, reason } },
    `dispatch:${localRunId}`,
  );
  await deps.reservations.release(runtimeInstanceId, r.sharedRunId);
  return false;
}

/** Whether the runtime knows the LocalRunId (GetRunStatus answers anything but `unknown`); unreachable counts as known (health decides). */
export async function runtimeKnowsRun(
  deps: AdmissionDeps,
  target: Pick<Placeable, "runtimeInstanceId" | "endpoint" | "transport">,
  localRunId: LocalRunId,
): Promise<boolean> {
  try {
    const res = await deps.send(
      target.endpoint!,
      target.transport,
      {
        operation: "GetRunStatus",
        runtimeInstanceId: target.runtimeInstanceId,
        correlationId: localRunId,
        payload: { localRunId },
      } as RuntimeCommand,
      deps.commandTokenFor(target.runtimeInstanceId),
      deps.config.dispatchTimeoutMs,
    );
    return !(res.success && (res.payload as { run?: { state?: string } }).run?.state === "unknown");
  } catch {
    return true;
  }
}

/** The check-then-send for a placement dispatched long ago and never started: re-sends only if the runtime does not know it. */
export function resendIfUnknown(
  deps: AdmissionDeps,
  r: IndexedRun,
  target: Target & Pick<Placeable, "endpoint">,
): () => Promise<void> {
  const localRunId = r.state.placement!.localRunId;
  return async () => {
    if (await runtimeKnowsRun(deps, target, localRunId)) return;
    const send = await recordDispatch(deps, r, target);
    if (send) await send();
  };
}
