import {
  isDroverError,
  tenantSettingsOf,
  type RuntimeFailureIncidentId,
  type RuntimeInstanceId,
} from "../../../contracts/index.ts";
import { foldRun } from "../../../aggregates/run.ts";
import { envelope } from "../../../platform/envelope.ts";
import { execRef, forensicsRef, runRef, type AggregateRef, type BatchEntry } from "../../../streams/index.ts";
import { classifyInventory, forensicsIdOf, type RecoveryItem } from "../domain/classify.ts";
import { crashLoopOf } from "../domain/crash-loop.ts";
import { appendDecided } from "./decided-append.ts";
import { summarizeExecution } from "../domain/exec-summary.ts";
import { recoveryTransition, type AggregateEvents } from "../domain/transitions.ts";
import type { RuntimeRecord } from "../domain/runtime-health.ts";
import type { RecoveryDeps } from "./deps.ts";
import { mapAtMost } from "../../../platform/map-at-most.ts";

const ATTEMPTS = 5;
/**
 * Items of one class moved at once (each a few reads; together one atomic batch of at most 64 × 5
 * messages, under the server's 1 000). At 16, W3's 20 in-flight executions of one runtime were two
 * batches one after the other, and the last four resumes waited ~200 ms for the second one.
 */
const ITEMS_AT_ONCE = 64;

/**
 * Recovery of a fenced runtime (recovery.md): inventory from the run aggregates, in-flight first;
 * each item moves atomically (exec paused-for-recovery + run requeue + forensics record), built from
 * a fresh read of its aggregates, the items of one class together in one atomic batch. The forensics
 * record's deterministic id and "must not exist" expectation make a re-run a no-op, so the reconciler
 * is idempotent. Finally the plan is
 * appended to the runtime aggregate. Nothing moves unless the runtime is fenced, or retired by a
 * planned stop whose event carries the proof that the exact host incarnation is gone.
 */
export async function reconcile(deps: RecoveryDeps, rt: RuntimeRecord): Promise<void> {
  // A planned stop (retired with the proof that its host is gone) moves work the same way, under
  // its `stop-…` id instead of an incident id: the forensics read models open no incident for it.
  const incidentId = rt.fenced?.incidentId ?? rt.stopped?.stopId;
  if (!incidentId || rt.planned) return;
  // Where a reconcile's time goes (in the plan's log line): the moves are what every resume waits for;
  // `cpuMs` is this process's CPU over them (the reads' decoding and the batches' encoding, mostly).
  const t0 = performance.now();
  const cpu0 = process.cpuUsage();
  const candidates = classifyInventory(
    rt.runtimeInstanceId,
    [...deps.state.runs.values()].map((r) => ({ ...r })),
  );
  // In-flight executions first, then the runs that never started. Within a class the items are read
  // side by side and move together in one atomic batch (recoverGroup): one at a time, 20 in-flight
  // executions took 1.7 s to requeue at load ~13 (most of W3's kill → resumed), and one batch each
  // queued at nats-server, which syncs every batch to disk at its commit, one commit at a time.
  const planned: RecoveryItem[] = [];
  for (const group of [
    candidates.filter((c) => c.class === "in-flight-execution"),
    candidates.filter((c) => c.class !== "in-flight-execution"),
  ])
    for (const item of await recoverGroup(deps, rt.runtimeInstanceId, incidentId, group)) if (item) planned.push(item);
  const cpu = process.cpuUsage(cpu0);
  const timings = { movedMs: Math.round(performance.now() - t0), cpuMs: Math.round((cpu.user + cpu.system) / 1000) };
  // The plan lists every item of the incident: those moved now, and those an earlier (interrupted or
  // conflicting) pass moved — their runs no longer point at the runtime, but their records remain.
  const items = new Map(
    planned.map((i) => [
      forensicsIdOf(i),
      {
        forensicsId: forensicsIdOf(i),
        tenantId: i.tenantId,
        sharedRunId: i.sharedRunId,
        localRunId: i.localRunId,
        ...(i.executionId ? { executionId: i.executionId } : {}),
        class: i.class,
      },
    ]),
  );
  for (const f of deps.state.forensics.values()) {
    const x = f.item;
    if (!x || x.incidentId !== incidentId || items.has(f.forensicsId)) continue;
    items.set(f.forensicsId, {
      forensicsId: f.forensicsId,
      tenantId: f.tenantId,
      sharedRunId: x.sharedRunId,
      localRunId: x.failedLocalRunId,
      ...(x.executionId ? { executionId: x.executionId } : {}),
      class: x.class,
    });
  }
  const order = (c: string) => (c === "in-flight-execution" ? 0 : 1);
  const data = {
    incidentId,
    items: [...items.values()].sort(
      (a, b) => order(a.class) - order(b.class) || (a.sharedRunId < b.sharedRunId ? -1 : 1),
    ),
  };
  const event = envelope(deps.env, "runtime.recovery-planned", data, {
    correlationId: incidentId,
    causationId: `recovery:${incidentId}`,
  });
  // On top of the host's observations of the fence's kill (decided-append.ts): a grace-0 delete at
  // the fence's start (a lost connection) puts the provisioner's `host-exited` after `fenced`, and
  // every such plan conflicted and was made again by a later pass, 0.7–1.3 s later (k8s P=5 trace).
  const a = await appendDecided(deps, rt, event, true);
  if ("dropped" in a) return;
  deps.log.warn(
    { runtime: rt.runtimeInstanceId, incidentId, items: data.items.length, conflicts: a.conflicts, ...timings },
    rt.fenced ? "recovery planned" : "planned stop: runs moved",
  );
}

/** An item as its fresh reads decide it: recovered already or moved on (`settled`), or the batch that moves it. */
type Prepared =
  | { readonly kind: "settled"; readonly item: RecoveryItem | undefined }
  | { readonly kind: "move"; readonly item: RecoveryItem; readonly entries: readonly BatchEntry[] };

/**
 * Moves a class's items, up to ITEMS_AT_ONCE at a time: each read side by side, then every item that
 * moves in one atomic batch (each item's facts are in it, with each aggregate's expectation, so all
 * land or none). A conflict (one run moved meanwhile) stores nothing: each item of the chunk is
 * then moved on its own from fresh reads, as before. Returns each candidate's outcome (recoverItem).
 */
async function recoverGroup(
  deps: RecoveryDeps,
  failed: RuntimeInstanceId,
  incidentId: RuntimeFailureIncidentId,
  group: readonly RecoveryItem[],
): Promise<(RecoveryItem | undefined)[]> {
  const out: (RecoveryItem | undefined)[] = [];
  for (let at = 0; at < group.length; at += ITEMS_AT_ONCE) {
    const chunk = group.slice(at, at + ITEMS_AT_ONCE);
    const prepared = await Promise.all(chunk.map((c) => prepareItem(deps, failed, incidentId, c)));
    const moving = prepared.flatMap((p) => (p.kind === "move" ? p.entries : []));
    if (moving.length > 0) {
      try {
        await deps.store.appendAtomic(moving);
      } catch (e) {
        if (!isDroverError(e, "version-conflict")) throw e;
        deps.log.info({ runtime: failed, items: chunk.length }, "recovery batch raced; moving its items one by one");
        out.push(...(await mapAtMost(chunk, ITEMS_AT_ONCE, (c) => recoverItem(deps, failed, incidentId, c))));
        continue;
      }
    }
    out.push(...prepared.map((p) => p.item));
  }
  return out;
}

/** Moves one item; returns it when it is recovered (now or by an earlier run), undefined when the run moved on. */
async function recoverItem(
  deps: RecoveryDeps,
  failed: RuntimeInstanceId,
  incidentId: RuntimeFailureIncidentId,
  candidate: RecoveryItem,
): Promise<RecoveryItem | undefined> {
  for (let attempt = 1; attempt <= ATTEMPTS; attempt++) {
    const p = await prepareItem(deps, failed, incidentId, candidate);
    if (p.kind === "settled") return p.item;
    try {
      await deps.store.appendAtomic(p.entries);
      return p.item;
    } catch (e) {
      if (!isDroverError(e, "version-conflict")) throw e;
      deps.log.info({ run: p.item.sharedRunId, attempt }, "recovery transition raced; re-reading");
    }
  }
  throw new Error(`recovery of ${candidate.sharedRunId} kept conflicting after ${ATTEMPTS} attempts`);
}

/** One item decided from fresh reads (the follower may lag: a batch expects the aggregates' true last sequences). */
async function prepareItem(
  deps: RecoveryDeps,
  failed: RuntimeInstanceId,
  incidentId: RuntimeFailureIncidentId,
  candidate: RecoveryItem,
): Promise<Prepared> {
  const { history, recorded, execHistory } = await readItem(deps, candidate);
  const run = foldRun(history);
  const [item] = classifyInventory(failed, [
    { tenantId: candidate.tenantId, sharedRunId: candidate.sharedRunId, state: run },
  ]);
  const forensicsId = forensicsIdOf(item ?? candidate);
  const exists =
    forensicsId === forensicsIdOf(candidate)
      ? recorded
      : (await deps.store.lastSeq(forensicsRef(candidate.tenantId, forensicsId))) > 0;
  if (exists) return { kind: "settled", item: item ?? candidate };
  if (!item) return { kind: "settled", item: undefined };
  // The candidate's execution was read beside the run; a run that started since the fold is read now.
  const exec = item.executionId
    ? summarizeExecution(
        item.executionId === candidate.executionId && execHistory
          ? execHistory
          : (await deps.store.read(execRef(item.tenantId, item.executionId))).events,
      )
    : undefined;
  const limit = tenantSettingsOf(deps.config, item.tenantId).maxCrashRecoveries;
  const crashLoop = item.executionId ? crashLoopOf(history, incidentId, limit) : undefined;
  if (crashLoop)
    deps.log.warn({ run: item.sharedRunId, ...crashLoop }, "crash loop: the run fails instead of resuming");
  const aggs = recoveryTransition(item, {
    incidentId,
    failedRuntimeInstanceId: failed,
    ...(exec ? { exec } : {}),
    ...(crashLoop ? { crashLoop } : {}),
  });
  const entries: BatchEntry[] = aggs.map((a) => ({
    ref: refOf(a),
    expectedSeq: a.expectedSeq,
    events: a.events.map((e) =>
      envelope(deps.env, e.type, e.data, {
        tenantId: a.tenantId,
        correlationId: item.sharedRunId,
        causationId: `recovery:${incidentId}`,
      }),
    ),
  }));
  return { kind: "move", item, entries };
}

/**
 * The reads one item's decision needs, side by side rather than one after another (under load each
 * read waits its turn at the server: in sequence, the run, the forensics record and the journal cost
 * a fenced runtime's in-flight item about as much again as its batch): the run's history, whether the
 * candidate's forensics record exists, and the candidate's execution journal (none for a run that
 * never started). Each is what the store holds now, never the follower's fold.
 */
async function readItem(deps: RecoveryDeps, candidate: RecoveryItem) {
  const [run, recordSeq, exec] = await Promise.all([
    // Its DAG and input unchecked (the reconcile uses neither): a DAG is ~10× any other event's parse,
    // a quarter of the reconcile's CPU in W3 (admission checked it in full before placing the run).
    deps.store.read(runRef(candidate.tenantId, candidate.sharedRunId), { withoutPayload: true }),
    deps.store.lastSeq(forensicsRef(candidate.tenantId, forensicsIdOf(candidate))),
    candidate.executionId ? deps.store.read(execRef(candidate.tenantId, candidate.executionId)) : undefined,
  ]);
  return { history: run.events, recorded: recordSeq > 0, execHistory: exec?.events };
}

function refOf(a: AggregateEvents): AggregateRef {
  return a.aggregate === "run"
    ? runRef(a.tenantId, a.id)
    : a.aggregate === "exec"
      ? execRef(a.tenantId, a.id)
      : forensicsRef(a.tenantId, a.id);
}
