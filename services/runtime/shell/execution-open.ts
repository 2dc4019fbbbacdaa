import type { Clock } from "../../../platform/clock.ts";
import {
  buildEvent,
  DroverError,
  isCheckedDag,
  isSubjectSafeId,
  type DagDefinition,
  type DataOf,
  type DroverEvent,
  type EventOrigin,
  type EventType,
  type ExecutionId,
  type HostIncarnation,
  type LocalRunId,
  type RuntimeCommand,
  type RuntimeInstanceId,
  type SharedRunId,
  type TenantId,
  type Writer,
} from "../../../contracts/index.ts";
import { execRef, runRef, type AggregateRef } from "../../../streams/subjects.ts";
import type { EventStore, StoredEvent } from "../../../streams/types.ts";
import { foldExecution, type ExecutionState } from "../../../aggregates/execution.ts";
import { canonicalJson, executionIdFromDigest, executionIdSeed } from "../../../aggregates/step-inputs.ts";
import { AggregateJournal } from "./journal.ts";
import { writeReused } from "./fork-reuse.ts";
import { sha256Hex } from "./step-runners.ts";

export type DispatchPayload = Extract<RuntimeCommand, { operation: "DispatchRun" }>["payload"];
export type ResumePayload = Extract<RuntimeCommand, { operation: "ResumeExecution" }>["payload"];

/** The IO and identity an execution needs; time and ids are injected so tests can fix them. */
export interface JournalEnv {
  readonly store: EventStore;
  readonly runtimeInstanceId: RuntimeInstanceId;
  readonly hostIncarnation: HostIncarnation;
  readonly clock: Clock;
  readonly newEventId: () => string;
  readonly sleep: (ms: number) => Promise<void>;
  /** Told about unanswered appends being retried (first and every 10th attempt). */
  readonly log?: (fields: Record<string, unknown>) => void;
}

/** An execution whose ownership is proven by the log: run `started` and exec `started`/`resumed` are durable. */
export interface OpenedExecution {
  readonly executionId: ExecutionId;
  readonly sharedRunId: SharedRunId;
  readonly localRunId: LocalRunId;
  readonly tenantId: TenantId;
  readonly epoch: number;
  readonly run: AggregateJournal;
  readonly exec: AggregateJournal;
  /** The journal as folded before this runtime's first write (empty for a fresh start). */
  readonly prior: ExecutionState;
  /** The journal's terminal event when it ended before its run did (the host died between the two). */
  readonly ended?: EndedEvent;
  readonly emit: <T extends EventType>(type: T, data: DataOf<T>) => DroverEvent;
}

/** ExecutionId of a (SharedRunId, LocalRunId): a retried DispatchRun of the same local run converges on it. */
export const executionIdFor = (sharedRunId: SharedRunId, localRunId: LocalRunId): ExecutionId =>
  executionIdFromDigest(sha256Hex(executionIdSeed(sharedRunId, localRunId)));
/**
 * The sha256 of the DAG's canonical JSON (recorded in `exec.started`, compared on resume). A DAG checked
 * in this process (`parseDag`, through the command handler's memo) is frozen, so its digest cannot
 * change and is kept with it: equal DAGs dispatched run after run share one checked object, whose
 * canonical JSON was ~45 µs for a 10-step chain and ~200 µs for 50 steps, once per run. Any other
 * object is digested each time.
 */
export function dagDigest(dag: DagDefinition): string {
  if (!isCheckedDag(dag)) return sha256Hex(canonicalJson(dag));
  let digest = digests.get(dag);
  if (digest === undefined) digests.set(dag, (digest = sha256Hex(canonicalJson(dag))));
  return digest;
}
const digests = new WeakMap<DagDefinition, string>();

function emitter(env: JournalEnv, p: DispatchPayload, epoch: number): OpenedExecution["emit"] {
  const writer: Writer = {
    service: "runtime",
    instanceId: env.runtimeInstanceId,
    runtimeInstanceId: env.runtimeInstanceId,
    hostIncarnation: env.hostIncarnation,
    epoch,
  };
  const origin: EventOrigin = {
    tenantId: p.tenantId,
    correlationId: p.correlationId,
    causationId: `local-run:${p.localRunId}`,
    writer,
  };
  return (type, data) => buildEvent(type, data, origin, { eventId: env.newEventId(), now: env.clock.now() });
}

const writerKey = (env: JournalEnv, epoch: number) => `${env.runtimeInstanceId}.e${epoch}`;

function journalFor(env: JournalEnv, ref: AggregateRef, seq: number, epoch: number): AggregateJournal {
  return new AggregateJournal(env.store, ref, seq, writerKey(env, epoch), env.sleep, (attempt, e) => {
    if (attempt === 1 || attempt % 10 === 0)
      env.log?.({ event: "append-retry", aggregate: ref.aggregate, id: ref.id, attempt, detail: e.message });
  });
}

/**
 * Starts a fresh execution for a dispatched run: run `started` expecting the run's `dispatched`
 * sequence (a requeued or cancelled run cannot be started by this runtime), then exec `started`
 * expecting an empty journal. Either conflict rejects with `execution-ownership-lost` and, for the
 * first, nothing is written.
 */
/**
 * A wait's signal may land on the run at any time, even before it starts, and an upgrade on a pinned
 * run between its dispatch and its resume: starting steps over them (never over a cancel).
 */
const SIGNALS: ReadonlySet<string> = new Set(["run.signal-received", "run.upgraded"]);

export async function openFresh(env: JournalEnv, p: DispatchPayload): Promise<OpenedExecution> {
  const executionId = executionIdFor(p.sharedRunId, p.localRunId);
  const emit = emitter(env, p, 0);
  const run = journalFor(env, runRef(p.tenantId, p.sharedRunId), p.dispatchedSeq, 0);
  await run.append(
    emit("run.started", {
      executionId,
      localRunId: p.localRunId,
      runtimeInstanceId: env.runtimeInstanceId,
    }),
    SIGNALS,
  );
  const exec = journalFor(env, execRef(p.tenantId, executionId), 0, 0);
  const started = emit("exec.started", execStarted(env, p, 0));
  const startedSeq = await exec.append(started);
  const opened = {
    executionId,
    sharedRunId: p.sharedRunId,
    localRunId: p.localRunId,
    tenantId: p.tenantId,
    epoch: 0,
    run,
    exec,
    emit,
  };
  // The prior state holds `exec.started`: the fold counts this runtime's events (the reused steps
  // written next) only once it knows the execution is placed here.
  return withReused(env, p, { ...opened, prior: foldExecution([{ seq: startedSeq, event: started }]) });
}

/**
 * A fork's reused steps, journaled before any step runs (see writeReused); when the original's
 * outputs are not what the fork was planned with, the journal ends `failed` here and the opened
 * execution carries that end, from which the run's own terminal event is written.
 */
async function withReused(env: JournalEnv, p: DispatchPayload, opened: OpenedExecution): Promise<OpenedExecution> {
  const r = await writeReused(env.store, p.tenantId, p.fork, opened.exec, opened.emit, opened.prior);
  if (r.ok) return { ...opened, prior: r.state };
  const reason = { code: "fork-upstream-incomplete" as const, detail: r.detail };
  const ended = opened.emit("exec.failed", { reason }) as EndedEvent;
  await opened.exec.append(ended);
  return { ...opened, prior: r.state, ended };
}

/** The journal's first event: who started it, for which run and DAG, at which epoch. */
const execStarted = (env: JournalEnv, p: DispatchPayload, epoch: number): DataOf<"exec.started"> => ({
  sharedRunId: p.sharedRunId,
  localRunId: p.localRunId,
  runtimeInstanceId: env.runtimeInstanceId,
  dagDigest: dagDigest(p.dag),
  stepCount: p.dag.steps.length,
  epoch,
});

/**
 * Reads and folds the journal and checks that `p` may resume it: the latest `paused-for-recovery`
 * is unresumed with newEpoch == p.epoch, the execution is not finished, and it belongs to the same
 * run and DAG; or, for a journal that already ended, that `p.epoch` is the epoch recovery moved the run
 * to (the resume then only writes the run's terminal event). Writes nothing. Rejects with
 * `resume-epoch-mismatch` or `dag-invalid`.
 */
export async function checkResumable(env: JournalEnv, p: ResumePayload): Promise<ExecutionState> {
  const history = await env.store.read(execRef(p.tenantId, p.executionId));
  const state = foldExecution(history.events);
  const refuse = (detail: string) =>
    new DroverError("resume-epoch-mismatch", `execution ${p.executionId}: ${detail}`, {
      details: { executionId: p.executionId, epoch: p.epoch },
    });
  if (state.terminal) {
    // The execution ended but its host died before the run's own terminal event: this resume only
    // finishes the run from the journal (recovery writes nothing after a terminal event, so it moves
    // the run to the epoch after the journal's; an older log may hold a paused-for-recovery instead).
    const expected = state.pendingRecovery?.newEpoch ?? state.epoch + 1;
    if (expected !== p.epoch)
      throw refuse(`already ${state.terminal}; finishing its run takes epoch ${expected}, command says ${p.epoch}`);
  } else if (state.lastSeq === 0) {
    // Never started: its host died between the run's `started` and the journal's first event, and
    // recovery moved the run to epoch 1 without writing to the empty journal; this resume starts it.
    if (p.epoch !== 1) throw refuse(`never started; starting it takes epoch 1, command says ${p.epoch}`);
  } else if (!state.pendingRecovery)
    throw refuse(`no unresumed paused-for-recovery in the journal (current epoch ${state.epoch})`);
  else if (state.pendingRecovery.newEpoch !== p.epoch)
    throw refuse(`journal's pending recovery epoch is ${state.pendingRecovery.newEpoch}, command says ${p.epoch}`);
  if (state.started && state.started.sharedRunId !== p.sharedRunId) {
    throw new DroverError(
      "contract-violation",
      `execution ${p.executionId} belongs to run ${state.started.sharedRunId}, not ${p.sharedRunId}`,
    );
  }
  if (state.started && state.started.dagDigest !== dagDigest(p.dag)) {
    throw new DroverError(
      "dag-invalid",
      `execution ${p.executionId} was started with another DAG (digest ${state.started.dagDigest})`,
    );
  }
  return state;
}

/**
 * Checks that the run's event at `p.dispatchedSeq` is the `dispatched` of `p.localRunId` to this
 * runtime (and, for a resume, of the execution being resumed). Run `started` is conditional on that
 * sequence, so without this a command carrying another placement's sequence could start the run on
 * a runtime it was never dispatched to (identities-and-events.md "Fencing" 1). Writes nothing;
 * rejects with `contract-violation` naming what the log holds at that sequence.
 *
 * The run's last `dispatched` is read first (one Direct Get on its subject): when it is the event at
 * `dispatchedSeq`, as for every command sent on a current placement, that is the event checked,
 * without the history read (a round trip through the provisioner's responder that was the largest
 * part of a dispatch's start). Anything else (an older dispatch, a lagging replica, no dispatch)
 * reads the history as before, so the decision and its refusals are the same.
 */
export async function checkDispatched(
  env: JournalEnv,
  p: DispatchPayload,
  resumeExecutionId?: ExecutionId,
  early?: DispatchReadAhead,
): Promise<void> {
  const ref = runRef(p.tenantId, p.sharedRunId);
  const last =
    early && early.tenantId === p.tenantId && early.sharedRunId === p.sharedRunId
      ? await early.read
      : await env.store.lastOfType(ref, "run.dispatched");
  const at =
    last?.seq === p.dispatchedSeq
      ? last.event
      : (await env.store.read(ref)).events.find((e) => e.seq === p.dispatchedSeq)?.event;
  const d = at?.type === "run.dispatched" ? at.data : undefined;
  const problem = !d
    ? `is ${at ? `its ${at.type} event` : "no event of this run"}, not a dispatched event`
    : d.localRunId !== p.localRunId
      ? `dispatched LocalRunId ${d.localRunId}, not ${p.localRunId}`
      : d.runtimeInstanceId !== env.runtimeInstanceId
        ? `dispatched ${p.localRunId} to ${d.runtimeInstanceId}, not to ${env.runtimeInstanceId}`
        : d.resumeExecutionId !== resumeExecutionId
          ? `dispatched ${d.resumeExecutionId ? `a resume of ${d.resumeExecutionId}` : "a fresh start"}, not ${resumeExecutionId ? `a resume of ${resumeExecutionId}` : "a fresh start"}`
          : undefined;
  if (problem) {
    throw new DroverError("contract-violation", `run ${p.sharedRunId} at sequence ${p.dispatchedSeq} ${problem}`, {
      details: { sharedRunId: p.sharedRunId, localRunId: p.localRunId, dispatchedSeq: p.dispatchedSeq },
    });
  }
}

/** The run's last `dispatched` as read for a command before its body was checked (`readDispatchAhead`). */
export interface DispatchReadAhead {
  readonly tenantId: string;
  readonly sharedRunId: string;
  readonly read: Promise<StoredEvent | undefined>;
}

/**
 * Starts `checkDispatched`'s one read (the run's last `dispatched`, a Direct Get) from the run a
 * DispatchRun body names, before the body is checked: the schema check of the command and its DAG
 * (~0.15-0.3 ms for a 50-step chain) then runs while the read is on the wire, instead of before it.
 * It only reads, from a body whose token was already proven; `checkDispatched` uses it only when the
 * checked payload names the same run, so the decision is the one it takes from its own read. A body
 * the schema refuses leaves the read unused (its failure is never unhandled). Undefined when the
 * body names no run (not a DispatchRun, or ids that are not subject-safe).
 */
export function readDispatchAhead(env: JournalEnv, body: unknown): DispatchReadAhead | undefined {
  const b = body as { operation?: unknown; payload?: { tenantId?: unknown; sharedRunId?: unknown } } | null;
  if (b?.operation !== "DispatchRun") return undefined;
  const { tenantId, sharedRunId } = b.payload ?? {};
  if (typeof tenantId !== "string" || typeof sharedRunId !== "string") return undefined;
  if (!isSubjectSafeId(tenantId) || !isSubjectSafeId(sharedRunId)) return undefined;
  const read = env.store.lastOfType(runRef(tenantId, sharedRunId), "run.dispatched");
  read.catch(() => undefined);
  return { tenantId, sharedRunId, read };
}

/**
 * ResumeExecution's checks side by side (both only read): checkResumable's history read and
 * checkDispatched's get are independent, so a resume waits for the slower of the two, not their sum.
 * A refusal is the same as when they ran one after the other: checkResumable's first when both refuse.
 * Resolves with the journal as checked, which `openResume` may reuse (see there).
 */
export async function checkResume(env: JournalEnv, p: ResumePayload): Promise<ExecutionState> {
  const [resumable, dispatched] = await Promise.allSettled([
    checkResumable(env, p),
    checkDispatched(env, p, p.executionId),
  ]);
  if (resumable.status === "rejected") throw resumable.reason;
  if (dispatched.status === "rejected") throw dispatched.reason;
  return resumable.value;
}

/**
 * The journal as `checked` by the command, without reading it again: no last-sequence get before the
 * appends. Nothing needs it: exec `resumed` is conditional on the checked sequence, so an event
 * appended since (or one a lagging replica hid from the check) makes that append fail with
 * `execution-ownership-lost` and no `resumed` of this runtime is stored; and recovery pauses a
 * journal again only together with a run event (one atomic batch), so run `started`, conditional on
 * `dispatchedSeq`, fails first and nothing at all is written. The get was one more round trip on every
 * resume after an incident. Without a check (none was made for this command), the journal is read
 * and checked here.
 */
async function resumableNow(env: JournalEnv, p: ResumePayload, checked?: ExecutionState): Promise<ExecutionState> {
  return checked ?? checkResumable(env, p);
}

const TERMINAL = new Set<string>(["exec.completed", "exec.failed", "exec.cancelled"]);
export type EndedEvent = Extract<DroverEvent, { type: "exec.completed" | "exec.failed" | "exec.cancelled" }>;

/**
 * Resumes an execution on this runtime: checks it (see checkResumable), appends run `started`
 * expecting the run's `dispatched` sequence, then exec `resumed` at the sequence just folded; for a
 * journal that already ended, nothing more is written to it and the opened execution carries its
 * terminal event (`ended`), from which the run's own terminal event is written.
 * Every later write carries writer.epoch = p.epoch. Conflicts reject with `execution-ownership-lost`.
 * `checked`: the journal as `checkResume` folded and checked it for this command, reused when still current.
 */
export async function openResume(
  env: JournalEnv,
  p: ResumePayload,
  checked?: ExecutionState,
): Promise<OpenedExecution> {
  const prior = await resumableNow(env, p, checked);
  const emit = emitter(env, p, p.epoch);
  const run = journalFor(env, runRef(p.tenantId, p.sharedRunId), p.dispatchedSeq, p.epoch);
  await run.append(
    emit("run.started", {
      executionId: p.executionId,
      localRunId: p.localRunId,
      runtimeInstanceId: env.runtimeInstanceId,
    }),
    SIGNALS,
  );
  const exec = journalFor(env, execRef(p.tenantId, p.executionId), prior.lastSeq, p.epoch);
  const opened = {
    executionId: p.executionId,
    sharedRunId: p.sharedRunId,
    localRunId: p.localRunId,
    tenantId: p.tenantId,
    epoch: p.epoch,
    run,
    exec,
    prior,
    emit,
  };
  if (prior.terminal) {
    const ended = (await env.store.read(execRef(p.tenantId, p.executionId))).events.findLast((e) =>
      TERMINAL.has(e.event.type),
    )?.event as EndedEvent;
    return { ...opened, ended };
  }
  if (prior.lastSeq === 0) await exec.append(emit("exec.started", execStarted(env, p, p.epoch)));
  else
    await exec.append(
      emit("exec.resumed", {
        runtimeInstanceId: env.runtimeInstanceId,
        localRunId: p.localRunId,
        epoch: p.epoch,
        completedSteps: prior.completed.size,
      }),
    );
  return withReused(env, p, opened);
}
