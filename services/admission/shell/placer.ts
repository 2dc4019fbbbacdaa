import {
  isSubjectSafeId,
  tenantSettingsOf,
  staleHeartbeatMsOf,
  type TenantSettings,
} from "../../../contracts/index.ts";
import { fairOrder } from "../domain/fair-queue.ts";
import { quotaDecision } from "../domain/quota.ts";
import { rankCandidates, whyNoCandidate } from "../domain/ranking.ts";
import { appendRunDecision } from "./append-run.ts";
import { readCandidates, type Placeable } from "./candidates.ts";
import type { AdmissionDeps } from "./deps.ts";
import { recordDispatch, runtimeKnowsRun } from "./dispatch.ts";
import { requestScaleOut } from "./scale-out.ts";
import type { IndexedRun } from "./run-index.ts";

const PARALLEL = 8;

/** What outlives one pass: runs being decided or sent, and the runtime commands still in flight. */
export interface AdmissionState {
  /** Runs a pass or an in-flight send is working on (never handled twice at once). */
  readonly busy: Set<string>;
  /** Tenant → its ResumeExecution commands sent and not yet answered: its other runs wait for them. */
  readonly resuming: Map<string, number>;
  /** Runtime commands in flight (stop() waits for them). */
  readonly sends: Set<Promise<unknown>>;
  /** Called when a command was answered (or failed), so runs waiting on it are looked at at once. */
  readonly onSendDone: () => void;
}

/** Hands a runtime command to run outside the pass. */
type SendLater = (send: () => Promise<unknown>) => void;

/**
 * One admission pass over every pending run, in fair order (recovery items first, then weighted
 * round-robin across tenants), at most PARALLEL runs at once; a tenant's quota counts its placements
 * in flight, so it holds within a replica. Slot reservations in Redis keep
 * concurrent placements (and replicas) from over-committing a runtime; conditional appends keep two
 * deciders from moving one run. Safe to run again at any time: every step is idempotent.
 *
 * The pass decides and records (reservation, admitted, dispatched); the runtime commands run outside
 * it, so a runtime slow to answer (up to dispatchTimeoutMs) holds up its own run, never the next pass
 * and so never another tenant's runs.
 */
export async function admissionPass(deps: AdmissionDeps, state: AdmissionState): Promise<void> {
  const { busy } = state;
  const now = deps.env.clock.now().getTime();
  const candidates = await readCandidates(deps.view, deps.reservations, now, staleHeartbeatMsOf(deps.config));
  const pending = deps.index.pending().filter((r) => !busy.has(key(r)));
  const byKey = new Map(pending.map((r) => [key(r), r]));
  const order = fairOrder(
    pending.map((r) => ({
      tenantId: r.tenantId,
      sharedRunId: r.sharedRunId,
      recovery: r.state.recoveryPending,
      sinceSeq: r.sinceSeq,
    })),
    (t) => tenantSettingsOf(deps.config, t).weight,
  ).map((p) => byKey.get(`${p.tenantId}/${p.sharedRunId}`)!);
  // Placements of one tenant in flight in this pass: the quota counts them with the tenant's active
  // runs, so parallel decisions cannot overshoot it within a replica.
  const inFlight = new Map<string, number>();
  // A tenant's interrupted executions go first, and its other runs are sent only once the resume
  // was answered: its replacement runtime then queues the resume ahead of redispatched and new runs
  // instead of racing them for its first free worker (a P=1 proof saw a resume wait 700 ms behind a
  // run dispatched in the same ms). Per tenant, so one tenant's slow resume never holds another's runs.
  const isResume = (r: IndexedRun) => r.state.resume !== undefined;
  const placeOne = async (r: IndexedRun) => {
    if (!isResume(r) && (state.resuming.get(r.tenantId) ?? 0) > 0) return; // next pass, after the answer
    const k = key(r);
    busy.add(k);
    inFlight.set(r.tenantId, (inFlight.get(r.tenantId) ?? 0) + 1);
    let sending = false;
    try {
      await handle(deps, r, candidates, now, (inFlight.get(r.tenantId) ?? 1) - 1, (send) => {
        sending = true;
        const resume = isResume(r);
        if (resume) state.resuming.set(r.tenantId, (state.resuming.get(r.tenantId) ?? 0) + 1);
        const p: Promise<unknown> = send()
          .catch((e) =>
            deps.log.error({ run: r.sharedRunId, err: String(e) }, "runtime command failed; retried next pass"),
          )
          .finally(() => {
            busy.delete(k);
            const left = (state.resuming.get(r.tenantId) ?? 1) - 1;
            if (resume && left > 0) state.resuming.set(r.tenantId, left);
            else if (resume) state.resuming.delete(r.tenantId);
            state.sends.delete(p);
            state.onSendDone();
          });
        state.sends.add(p);
      });
    } catch (e) {
      deps.log.error({ run: r.sharedRunId, err: String(e) }, "admission of run failed; retried next pass");
    } finally {
      inFlight.set(r.tenantId, (inFlight.get(r.tenantId) ?? 1) - 1);
      if (!sending) busy.delete(k);
    }
  };
  const resumes = new Map<string, Promise<void>[]>();
  await placeAll([...order.filter(isResume), ...order.filter((r) => !isResume(r))], async (r) => {
    if (!isResume(r)) {
      await Promise.all(resumes.get(r.tenantId) ?? []);
      return placeOne(r);
    }
    const placed = placeOne(r);
    resumes.set(r.tenantId, [...(resumes.get(r.tenantId) ?? []), placed]);
    return placed;
  });
}

/** Runs `f` over `list` in order, at most PARALLEL at once (an item is taken only after every earlier one was). */
async function placeAll(list: readonly IndexedRun[], f: (r: IndexedRun) => Promise<void>): Promise<void> {
  let i = 0;
  const worker = async () => {
    for (let r = list[i++]; r; r = list[i++]) await f(r);
  };
  await Promise.all(Array.from({ length: Math.min(PARALLEL, list.length) }, worker));
}

const key = (r: IndexedRun) => `${r.tenantId}/${r.sharedRunId}`;

async function handle(
  deps: AdmissionDeps,
  r: IndexedRun,
  candidates: Placeable[],
  now: number,
  othersInFlight: number,
  sendLater: SendLater,
): Promise<void> {
  const s = r.state;
  if (r.invalid && s.status === "none") return rejectInvalid(deps, r);
  const stale = now - r.sinceMs > 2 * deps.config.dispatchTimeoutMs;
  if (s.status === "admitted" && s.placement) {
    // Admitted but never dispatched: the replica that admitted it died (or this is its own earlier attempt). Finish it.
    if (!stale) return;
    const target = candidates.find((c) => c.runtimeInstanceId === s.placement!.runtimeInstanceId);
    const send = await recordDispatch(
      deps,
      r,
      target ?? { runtimeInstanceId: s.placement.runtimeInstanceId, transport: "http" },
    );
    if (send) sendLater(send);
    return;
  }
  if (s.status === "dispatched" && s.placement) {
    // Dispatched long ago and never started: the sender may have died before the command left.
    // Ask the runtime; if it does not know the LocalRunId, send the (idempotent) command again.
    if (!stale || now - (r.checkedMs ?? 0) < 2 * deps.config.dispatchTimeoutMs) return;
    r.checkedMs = now;
    const target = candidates.find((c) => c.runtimeInstanceId === s.placement!.runtimeInstanceId);
    const localRunId = s.placement.localRunId;
    if (target?.endpoint) {
      sendLater(async () => {
        if (await runtimeKnowsRun(deps, target, localRunId)) return;
        const send = await recordDispatch(deps, r, target);
        if (send) await send();
      });
    }
    return;
  }
  const tenant = tenantSettingsOf(deps.config, r.tenantId);
  const quota = quotaDecision(tenant, deps.index.activeCount(r.tenantId) + othersInFlight, s);
  if (quota.kind !== "ok") {
    await appendRunDecision(
      deps,
      r,
      quota.kind === "reject"
        ? { kind: "Reject", reason: quota.reason }
        : { kind: "QueueGlobally", reason: quota.reason },
      "quota",
    );
    return;
  }
  // Back off after dispatch failures (exponential, capped), and try another runtime than the last that refused.
  if (s.dispatchFailures > 0 && now - r.sinceMs < Math.min(10_000, 100 * 2 ** s.dispatchFailures)) return;
  const ranked = rankCandidates(candidates, tenant);
  const fresh = ranked.filter((x) => x.candidate.runtimeInstanceId !== s.lastFailedRuntimeId);
  for (const { candidate } of fresh.length > 0 ? fresh : ranked) {
    const c = candidate as Placeable;
    const outcome = await deps.reservations.reserve(
      c.runtimeInstanceId,
      r.sharedRunId,
      c.heartbeatSlots,
      3 * deps.config.dispatchTimeoutMs,
      now,
    );
    if (outcome === "full") continue;
    const localRunId = deps.env.ids.next("lr");
    const admittedSeq = await appendRunDecision(
      deps,
      r,
      {
        kind: "Admit",
        data: {
          runtimeInstanceId: c.runtimeInstanceId,
          localRunId,
          reservationId: `${c.runtimeInstanceId}/${r.sharedRunId}`,
          candidates: rankCandidates(candidates, tenant)
            .slice(0, 8)
            .map((x) => ({ runtimeInstanceId: x.candidate.runtimeInstanceId, rank: x.rank, why: x.why })),
          recovery: s.recoveryPending,
        } as never,
      },
      `admission:${r.sharedRunId}:${s.lastSeq}`,
    );
    // Lost the run to another decider: keep the reservation until it expires. Releasing it could free
    // a slot the winner holds under the same key (same run) and let a third placement over-commit.
    if (admittedSeq === undefined) return;
    const send = await recordDispatch(deps, r, c);
    if (send) sendLater(send);
    return;
  }
  await queueWithScaleOut(deps, r, tenant, candidates, now);
}

async function queueWithScaleOut(
  deps: AdmissionDeps,
  r: IndexedRun,
  tenant: TenantSettings,
  candidates: Placeable[],
  now: number,
): Promise<void> {
  const why = whyNoCandidate(candidates, tenant);
  const { requestId, stalled } = await requestScaleOut(
    deps,
    tenant,
    { code: "no-visible-capacity", detail: "" },
    r.sharedRunId,
    candidates,
    r.queuedSinceMs,
  );
  if (stalled) deps.log.warn({ tenant: r.tenantId, run: r.sharedRunId, requestId }, "queue stalled; re-planned");
  const reason = stalled
    ? {
        code: "queue-stalled" as const,
        detail:
          `queued ${now - r.queuedSinceMs!} ms with no visible capacity and no scale-out in progress; re-planned from the log: ${
            requestId ? `waiting on ${requestId}` : "no scale-out request can be made now"
          }. ${why}`.slice(0, 2000),
      }
    : { code: "no-visible-capacity" as const, detail: why.slice(0, 2000) };
  await appendRunDecision(
    deps,
    r,
    { kind: "QueueGlobally", reason, ...(requestId ? { scaleOutRequestId: requestId } : {}) },
    `queue:${r.sharedRunId}`,
  );
}

async function rejectInvalid(deps: AdmissionDeps, r: IndexedRun): Promise<void> {
  if (!isSubjectSafeId(r.tenantId) || !isSubjectSafeId(r.sharedRunId)) {
    // No valid `rejected` can name this run: report it once and stop trying (the raw message stays in the log).
    deps.log.error(
      { subject: `${r.tenantId}/${r.sharedRunId}`, seq: r.invalid!.seq, err: r.invalid!.error },
      "invalid submission with an unusable subject; cannot be rejected",
    );
    r.abandoned = true;
    return;
  }
  // The invalid submission is the aggregate's last event; `rejected` must follow exactly it.
  const state = { ...r.state, status: "submitted" as const, lastSeq: r.invalid!.seq };
  await appendRunDecision(
    deps,
    { ...r, state },
    { kind: "Reject", reason: { code: "contract-violation", detail: r.invalid!.error.slice(0, 2000) } },
    `validation:${r.invalid!.seq}`,
  );
}
