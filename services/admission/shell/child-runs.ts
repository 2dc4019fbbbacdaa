import { setTimeout as delay } from "node:timers/promises";
import type { JetStreamClient, JsMsg } from "@nats-io/jetstream";
import type { Logger } from "pino";
import { foldExecution } from "../../../aggregates/execution.ts";
import { foldRun, isTerminal } from "../../../aggregates/run.ts";
import {
  decodeEvent,
  EventId,
  isDroverError,
  TenantId,
  type DataOf,
  type DroverEvent,
  type OnParentCancel,
} from "../../../contracts/index.ts";
import { envelope, type EnvelopeContext } from "../../../platform/envelope.ts";
import { follow, type Follower } from "../../../platform/follow.ts";
import { aggregateSubject, execRef, runRef, type EventStore, type StreamLayout } from "../../../streams/index.ts";
import { childSubmission } from "../domain/child-submission.ts";

export interface ChildRunsDeps {
  readonly js: JetStreamClient;
  readonly layout: StreamLayout;
  readonly store: EventStore;
  readonly env: EnvelopeContext;
  readonly log: Pick<Logger, "info" | "warn">;
  /** First wait after a failed read or append (doubling up to 5 s; default 250 ms). */
  readonly retryMs?: number;
}

interface Child {
  readonly tenantId: string;
  readonly childRunId: string;
  readonly executionId: string;
  readonly stepId: string;
  readonly attempt: number;
  readonly onParentCancel: OnParentCancel;
}

/**
 * Child runs (docs/control-flow.md "Child runs"), the control-plane side. A runtime only journals
 * a run step's decision (`exec.child-run-submitted`); it may not write `run.submitted` or
 * `run.cancel-requested` (docs/nats-identities.md). Admission follows those decisions and appends
 * the child's `run.submitted` at expected sequence 0 (derived id: a conflict means it is there),
 * and appends `run.cancel-requested { by: "run:<parent>" }` to a child whose step says
 * `onParentCancel: "cancel"` when its parent run ends failed or cancelled, or its attempt of the
 * run step fails (a timeout). What it keeps in memory (parent → children) is rebuilt from the log
 * on start. A failed read or append is retried (the follower waits); nothing is dropped but an
 * event its schema refuses (logged).
 */
export async function startChildRuns(deps: ChildRunsDeps): Promise<Follower> {
  const p = deps.layout.eventPrefix;
  const byParent = new Map<string, Child[]>();
  const parentOfExec = new Map<string, string>();
  let stopped = false;

  const persist = async (what: string, fn: () => Promise<void>): Promise<void> => {
    for (let wait = deps.retryMs ?? 250; !stopped; wait = Math.min(wait * 2, 5_000)) {
      try {
        return await fn();
      } catch (e) {
        // An event the schema refuses (nothing was sent) will be refused again: logged, passed over.
        if (isDroverError(e, "contract-violation"))
          return deps.log.warn({ err: String(e), what }, "child run event refused by its schema; skipped");
        deps.log.warn({ err: String(e), what }, "child run step failed; retrying");
        await delay(wait);
      }
    }
  };
  const register = (parentKey: string, c: Child): void => {
    const list = byParent.get(parentKey) ?? [];
    if (!list.some((x) => x.childRunId === c.childRunId)) byParent.set(parentKey, [...list, c]);
    parentOfExec.set(`${c.tenantId}/${c.executionId}`, parentKey);
  };

  const onDecision = async (tenantId: string, executionId: string, seq: number, data: Decision): Promise<void> => {
    const childRef = runRef(tenantId, data.childRunId);
    const existing = (await deps.store.read(childRef)).events.find((e) => e.event.type === "run.submitted")?.event;
    const link = existing?.type === "run.submitted" ? existing.data.parent : undefined;
    if (link) {
      register(`${tenantId}/${link.sharedRunId}`, {
        ...childOf(tenantId, executionId, data),
        onParentCancel: link.onParentCancel,
      });
      return;
    }
    if (existing) return;
    const journal = (await deps.store.read(execRef(tenantId, executionId))).events;
    const parentRunId = foldExecution(journal).started?.sharedRunId;
    const parent = foldRun(parentRunId ? (await deps.store.read(runRef(tenantId, parentRunId))).events : []);
    const decided = childSubmission({ tenantId, executionId, seq, data }, journal, parent);
    if (decided.kind === "skip") {
      deps.log.info(
        { tenantId, executionId, seq, childRunId: data.childRunId, why: decided.why },
        "child run not submitted",
      );
      return;
    }
    const event = {
      ...envelope(deps.env, "run.submitted", decided.data, {
        tenantId: TenantId.parse(tenantId),
        correlationId: data.childRunId,
        causationId: `exec:${executionId}:${data.stepId}`,
      }),
      eventId: EventId.parse(decided.eventId),
    } as DroverEvent;
    try {
      await deps.store.append(childRef, event, {
        expectedSeq: 0,
        msgId: `${aggregateSubject(deps.layout, childRef)}:${decided.eventId}`,
      });
    } catch (e) {
      // Another replica (or this one before a restart) submitted it: the child is there.
      if (!isDroverError(e, "version-conflict")) throw e;
    }
    const { onParentCancel } = decided;
    register(`${tenantId}/${decided.parentRunId}`, { ...childOf(tenantId, executionId, data), onParentCancel });
  };

  const cancel = async (c: Child, parentRunId: string, reason: string): Promise<void> => {
    if (c.onParentCancel === "abandon") return;
    const ref = runRef(c.tenantId, c.childRunId);
    for (let attempt = 1; attempt <= 5; attempt++) {
      const history = await deps.store.read(ref);
      const s = foldRun(history.events);
      if (s.status === "none" || isTerminal(s.status) || s.cancelRequested) return;
      const event = envelope(
        deps.env,
        "run.cancel-requested",
        { by: `run:${parentRunId}`, reason: reason.slice(0, 500) },
        { tenantId: TenantId.parse(c.tenantId), correlationId: c.childRunId, causationId: `run:${parentRunId}` },
      );
      try {
        await deps.store.append(ref, event, {
          expectedSeq: history.lastSeq,
          msgId: `${aggregateSubject(deps.layout, ref)}:${event.eventId}`,
        });
        deps.log.info({ childRunId: c.childRunId, parentRunId, reason }, "child run cancel requested");
        return;
      } catch (e) {
        // The child moved meanwhile: read it again and decide again.
        if (!isDroverError(e, "version-conflict")) throw e;
      }
    }
  };

  // A run step's attempt failed (its timeout, or its child ended badly): cancel that attempt's child.
  const onStepFailed = async (tenantId: string, executionId: string, data: DataOf<"exec.step-failed">) => {
    const parentKey = parentOfExec.get(`${tenantId}/${executionId}`);
    const c = byParent
      .get(parentKey ?? "")
      ?.find((x) => x.executionId === executionId && x.stepId === data.stepId && x.attempt === data.attempt);
    if (!c || c.onParentCancel === "abandon") return;
    // Only the placed runtime's failure counts (the fold steps over the rest).
    const failed = foldExecution((await deps.store.read(execRef(tenantId, executionId))).events).failures.get(c.stepId);
    if ((failed?.attempt ?? 0) < c.attempt) return;
    const parentRunId = parentKey!.slice(tenantId.length + 1);
    const why = `run step ${c.stepId} attempt ${c.attempt} of parent run ${parentRunId} failed: ${data.code ?? data.error}`;
    await cancel(c, parentRunId, why);
  };

  const onParentEnded = async (tenantId: string, parentRunId: string, type: string): Promise<void> => {
    const key = `${tenantId}/${parentRunId}`;
    const children = byParent.get(key);
    if (!children) return;
    // Only what the run fold counts (a write by a runtime the run is not placed on is stepped over).
    const s = foldRun((await deps.store.read(runRef(tenantId, parentRunId))).events);
    if (type !== "run.completed") {
      if (s.status !== "failed" && s.status !== "cancelled") return;
      for (const c of children) await cancel(c, parentRunId, `parent run ${parentRunId} ${s.status}`);
    } else if (s.status !== "completed") return;
    byParent.delete(key);
    for (const c of children) parentOfExec.delete(`${c.tenantId}/${c.executionId}`);
  };

  const onMsg = async (m: JsMsg): Promise<void> => {
    const [agg, tenantId, id] = m.subject.slice(p.length + 1).split(".");
    // A run's end matters only to a parent with children here: every other run's end (one per run
    // admitted) is not decoded at all (its schema check was ~1% of admission's CPU in a burst, issue 15).
    if (agg === "run" && !byParent.has(`${tenantId}/${id}`)) return;
    let event: DroverEvent;
    try {
      event = decodeEvent(m.data, { seq: m.seq, subject: m.subject });
    } catch (e) {
      deps.log.warn({ subject: m.subject, seq: m.seq, err: String(e) }, "invalid event in the stream");
      return;
    }
    if (!tenantId || !id || event.tenantId !== tenantId) return;
    if (agg === "exec" && event.type === "exec.child-run-submitted")
      await persist("submit", () => onDecision(tenantId, id, m.seq, event.data));
    else if (agg === "exec" && event.type === "exec.step-failed")
      await persist("cancel", () => onStepFailed(tenantId, id, event.data));
    else if (agg === "run") await persist("cancel", () => onParentEnded(tenantId, id, event.type));
  };

  const follower = await follow(
    deps.js,
    {
      stream: deps.layout.eventStream,
      filters: [
        `${p}.exec.*.*.child-run-submitted`,
        `${p}.exec.*.*.step-failed`,
        ...["failed", "cancelled", "completed"].map((n) => `${p}.run.*.*.${n}`),
      ],
    },
    onMsg,
  );
  return {
    ...follower,
    caughtUp: follower.caughtUp,
    done: follower.done,
    async stop() {
      stopped = true;
      await follower.stop();
    },
  };
}

type Decision = DataOf<"exec.child-run-submitted">;

const childOf = (tenantId: string, executionId: string, d: Decision) => ({
  tenantId,
  executionId,
  childRunId: d.childRunId,
  stepId: d.stepId,
  attempt: d.attempt,
});
