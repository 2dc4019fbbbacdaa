import { parseMapItemId, type DroverEvent } from "../contracts/index.ts";
import { checkSentAgain, notQueuedAtKill } from "./send-failed.ts";

/** A stored event as the proof reads it (structurally streams' StoredEvent). */
export interface LoggedEvent {
  readonly seq: number;
  readonly subject: string;
  readonly event: DroverEvent;
  /** Server receive time, when the log was read from the stream. */
  readonly time?: Date;
}

export interface KillRecord {
  readonly tenantId: string;
  readonly runtimeInstanceId: string;
  readonly hostIncarnation: string;
  readonly executionId: string;
  readonly sharedRunId: string;
  readonly completedAtKill: number;
  /** Wall-clock ms when the signal was sent (same machine as the server that stamps events). */
  readonly killedAtMs: number;
  /** When the triggering step-completed was stored (JetStream's timestamp) and when the gate handled it. */
  readonly stepDurableAtMs: number;
  readonly stepSeenAtMs: number;
}

export interface ProofFacts {
  readonly impactedTenants: readonly string[];
  readonly safeTenants: readonly string[];
  readonly runs: readonly { readonly tenantId: string; readonly sharedRunId: string }[];
  readonly kills: readonly KillRecord[];
}

export interface AssertionResult {
  readonly name: string;
  readonly ok: boolean;
  readonly violations: number;
  readonly detail: string;
}

const IN_FLIGHT_TIMELINE = [
  "execution-recovery-candidate-detected",
  "failed-local-run-marked-requeued-for-recovery",
  "shared-run-requeued-for-resume",
  "replacement-runtime-selected",
  "replacement-local-run-registered",
  "resume-context-seeded",
  "dag-resume-started",
  "dag-resume-completed",
  "execution-recovery-completed",
];
const LOCAL_QUEUED_TIMELINE = [
  "execution-recovery-candidate-detected",
  "failed-local-run-marked-requeued-for-recovery",
  "shared-run-requeued-for-local-queued-recovery",
  "replacement-runtime-selected",
  "replacement-local-run-registered",
  "execution-recovery-completed",
];
const RECOVERY_TYPES = (t: string) =>
  t.startsWith("forensics.") ||
  t.startsWith("run.requeued") ||
  t === "exec.paused-for-recovery" ||
  t === "exec.resumed";

/** Splits `<prefix...>.<aggregate>.<tenant>.<id>.<event>` given the prefix's token count. */
function tokens(subject: string, prefixTokens: number) {
  const t = subject.split(".").slice(prefixTokens);
  return { aggregate: t[0]!, scope: t[1]!, id: t.length > 3 ? t[2]! : undefined };
}

/**
 * The proof's assertions (proof-and-bench.md 1–6) over the whole event log, pure: every run completes
 * exactly once; the in-flight execution keeps its ExecutionId, has one step-completed per step and
 * resumes at the first incomplete step (of a DAG: a step ready at the resume, or an unfinished item
 * of a ready map step); local-queued runs are redispatched with a new LocalRunId and
 * a new ExecutionId; no event of a killed incarnation follows its `fenced`; safe tenants carry no
 * recovery evidence; each recovered item has one forensics record with its full timeline.
 */
export function assertProof(log: readonly LoggedEvent[], facts: ProofFacts, prefixTokens: number): AssertionResult[] {
  const byRun = new Map<string, LoggedEvent[]>();
  const byExec = new Map<string, LoggedEvent[]>();
  const byForensics = new Map<string, LoggedEvent[]>();
  for (const e of log) {
    const t = tokens(e.subject, prefixTokens);
    const key = `${t.scope}/${t.id}`;
    const map =
      t.aggregate === "run"
        ? byRun
        : t.aggregate === "exec"
          ? byExec
          : t.aggregate === "forensics"
            ? byForensics
            : undefined;
    map?.set(key, [...(map.get(key) ?? []), e]);
  }
  const results: AssertionResult[] = [];
  const check = (name: string, failures: string[], okDetail: string) =>
    results.push({
      name,
      ok: failures.length === 0,
      violations: failures.length,
      detail: failures.length === 0 ? okDetail : failures.slice(0, 5).join("; "),
    });

  // 1. exactly once, none lost
  const lost: string[] = [],
    dup: string[] = [];
  for (const r of facts.runs) {
    const n = (byRun.get(`${r.tenantId}/${r.sharedRunId}`) ?? []).filter(
      (e) => e.event.type === "run.completed",
    ).length;
    if (n === 0) lost.push(r.sharedRunId);
    if (n > 1) dup.push(r.sharedRunId);
  }
  check(
    "lost: every submitted run completed",
    lost.map((x) => `lost ${x}`),
    `${facts.runs.length} runs completed`,
  );
  check(
    "duplicates: no run completed twice",
    dup.map((x) => `duplicate ${x}`),
    "0 duplicates",
  );

  // 2. in-flight: same ExecutionId, one step-completed per step, resume at the first incomplete step
  const inflight: string[] = [];
  for (const k of facts.kills) {
    const run = byRun.get(`${k.tenantId}/${k.sharedRunId}`) ?? [];
    const execIds = new Set(run.flatMap((e) => (e.event.type === "run.started" ? [e.event.data.executionId] : [])));
    if (execIds.size !== 1 || !execIds.has(k.executionId as never))
      inflight.push(`${k.sharedRunId}: executions ${[...execIds].join(",")}`);
    const journal = byExec.get(`${k.tenantId}/${k.executionId}`) ?? [];
    const steps = journal.flatMap((e) =>
      e.event.type === "exec.step-completed" ? [e.event.data.stepId as string] : [],
    );
    if (new Set(steps).size !== steps.length) inflight.push(`${k.executionId}: duplicate step-completed`);
    const resumedAt = journal.findIndex((e) => e.event.type === "exec.resumed");
    if (resumedAt < 0) {
      const done = journal.find((e) => e.event.type === "exec.completed");
      inflight.push(
        done?.time && done.time.getTime() <= k.killedAtMs
          ? `${k.executionId}: completed ${k.killedAtMs - done.time.getTime()} ms before its kill (the proof lagged behind the journal: a harness fault, no resume was due)`
          : `${k.executionId}: never resumed`,
      );
      continue;
    }
    const resumed = journal[resumedAt]!.event;
    if (resumed.type === "exec.resumed" && resumed.data.runtimeInstanceId === k.runtimeInstanceId)
      inflight.push(`${k.executionId}: resumed on the failed runtime`);
    const before = new Set(
      journal
        .slice(0, resumedAt)
        .flatMap((e) => (e.event.type === "exec.step-completed" ? [e.event.data.stepId as string] : [])),
    );
    const firstAfter = journal.slice(resumedAt).find((e) => e.event.type === "exec.step-completed");
    const expected = readyAtResume(log, k, before);
    if (firstAfter?.event.type === "exec.step-completed" && !expected.accepts(firstAfter.event.data.stepId)) {
      inflight.push(
        `${k.executionId}: first step after resume ${firstAfter.event.data.stepId}, expected ${expected.steps.join(" or ")}`,
      );
    }
  }
  check(
    "in-flight: same ExecutionId, one step-completed per step, resumed at the first incomplete step (or map item)",
    inflight,
    `${facts.kills.length} executions resumed`,
  );

  // 3. local-queued: requeued, new LocalRunId, new ExecutionId (or, when the log shows the run never
  // reached the killed runtime — its send failed, or it was never placed there — queued as ordinary
  // work: see send-failed.ts)
  const lq: string[] = [];
  let lqCount = 0,
    sentAgain = 0,
    placedElsewhere = 0;
  const localQueuedOf = new Map<string, number>();
  for (const k of facts.kills) {
    for (const r of facts.runs.filter((x) => x.tenantId === k.tenantId && x.sharedRunId !== k.sharedRunId)) {
      const run = byRun.get(`${r.tenantId}/${r.sharedRunId}`) ?? [];
      const not = notQueuedAtKill(byRun, k, r.sharedRunId);
      if (not) {
        if (not.kind === "send-failed") sentAgain++;
        else placedElsewhere++;
        lq.push(...checkSentAgain(run, not, r.sharedRunId));
        continue;
      }
      localQueuedOf.set(k.tenantId, (localQueuedOf.get(k.tenantId) ?? 0) + 1);
      const at = run.findIndex((e) => e.event.type === "run.requeued-for-local-queued-recovery");
      if (at < 0) {
        lq.push(`${r.sharedRunId}: not requeued for local-queued recovery`);
        continue;
      }
      lqCount++;
      const lrBefore = run
        .slice(0, at)
        .flatMap((e) => (e.event.type === "run.admitted" ? [e.event.data.localRunId] : []));
      const lrAfter = run.slice(at).flatMap((e) => (e.event.type === "run.admitted" ? [e.event.data.localRunId] : []));
      if (lrAfter.length === 0 || lrAfter.some((l) => lrBefore.includes(l)))
        lq.push(`${r.sharedRunId}: no new LocalRunId`);
      if (run.slice(0, at).some((e) => e.event.type === "run.started"))
        lq.push(`${r.sharedRunId}: had started before the crash`);
      if (run.slice(at).filter((e) => e.event.type === "run.started").length !== 1)
        lq.push(`${r.sharedRunId}: not started exactly once after redispatch`);
    }
  }
  check(
    "local-queued: requeued-for-local-queued-recovery, new LocalRunId, new ExecutionId",
    lq,
    `${lqCount} runs redispatched` +
      (sentAgain > 0 ? `, ${sentAgain} whose send to the killed runtime failed queued again as new work` : "") +
      (placedElsewhere > 0 ? `, ${placedElsewhere} not yet placed at the kill placed on the replacement` : ""),
  );

  // 4. fencing
  const fence: string[] = [];
  for (const k of facts.kills) {
    const fenced = log.find(
      (e) => e.event.type === "runtime.fenced" && e.subject.includes(`.runtime.${k.runtimeInstanceId}.`),
    );
    if (!fenced) {
      fence.push(`${k.runtimeInstanceId}: never fenced`);
      continue;
    }
    const late = log.filter((e) => e.seq > fenced.seq && e.event.writer.hostIncarnation === k.hostIncarnation);
    if (late.length > 0)
      fence.push(`${k.runtimeInstanceId}: ${late.length} events after fenced (first at seq ${late[0]!.seq})`);
  }
  check(
    "fence_violations: no event of a failed incarnation after its fenced",
    fence,
    `${facts.kills.length} runtimes fenced, 0 violations`,
  );

  // 5. safe tenants
  const leaks = log.filter((e) => facts.safeTenants.includes(e.event.tenantId ?? "") && RECOVERY_TYPES(e.event.type));
  const safeRuntimeIncidents = log.filter(
    (e) =>
      e.event.type === "runtime.recovery-planned" &&
      e.event.data.items.some((i) => facts.safeTenants.includes(i.tenantId)),
  );
  check(
    "safe_leaks: safe tenants carry no recovery or forensics evidence",
    [
      ...leaks.map((e) => `${e.event.type} at seq ${e.seq}`),
      ...safeRuntimeIncidents.map((e) => `plan names a safe tenant at seq ${e.seq}`),
    ],
    `${facts.safeTenants.length} safe tenants, 0 leaks`,
  );

  // 6. forensics: one record per item, full timeline
  const fx: string[] = [];
  const items = log.flatMap((e) =>
    e.event.type === "runtime.recovery-planned" ? e.event.data.items.map((i) => ({ ...i })) : [],
  );
  for (const item of items) {
    const rec = byForensics.get(`${item.tenantId}/${item.forensicsId}`) ?? [];
    const types = rec.map((e) => e.event.type.slice("forensics.".length));
    const want = item.class === "in-flight-execution" ? IN_FLIGHT_TIMELINE : LOCAL_QUEUED_TIMELINE;
    if (JSON.stringify(types) !== JSON.stringify(want)) fx.push(`${item.forensicsId}: ${types.join(">")}`);
  }
  const expectedItems = facts.kills.length + [...localQueuedOf.values()].reduce((a, b) => a + b, 0);
  if (items.length !== expectedItems) fx.push(`expected ${expectedItems} recovery items, planned ${items.length}`);
  check("forensics: one record per recovered item with the full timeline", fx, `${items.length} records complete`);
  return results;
}

/**
 * The steps that may complete first after the resume: those not completed before it whose
 * dependencies all were (for a chain, exactly the first incomplete step); of a ready map step, any
 * of its items not completed before the resume (an item is `<map>--<index>`, docs/control-flow.md).
 */
function readyAtResume(
  log: readonly LoggedEvent[],
  k: KillRecord,
  done: Set<string>,
): { steps: string[]; accepts: (stepId: string) => boolean } {
  const submitted = log.find(
    (e) =>
      e.event.type === "run.submitted" && e.event.tenantId === k.tenantId && e.event.data.sharedRunId === k.sharedRunId,
  );
  if (submitted?.event.type !== "run.submitted") return { steps: [], accepts: () => false };
  const ready = submitted.event.data.dag.steps.filter((s) => !done.has(s.id) && s.dependsOn.every((d) => done.has(d)));
  const steps = ready.map((s) => s.id as string).sort();
  const maps = new Set(ready.filter((s) => s.map).map((s) => s.id as string));
  return {
    steps,
    accepts: (id) => steps.includes(id) || (!done.has(id) && parseMapItemId(id, (m) => maps.has(m)) !== undefined),
  };
}
