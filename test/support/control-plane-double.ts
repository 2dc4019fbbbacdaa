import { randomUUID } from "node:crypto";
import { jetstreamManager } from "@nats-io/jetstream";
import { type NatsConnection } from "@nats-io/transport-node";
import { historyResponderSwitch, type HistorySwitch } from "./history-responder-switch.ts";
import { connectHarness } from "../../platform/nats-auth/server-keys.ts";
import { setupNats } from "../../platform/nats-setup.ts";
import {
  isDroverError,
  type DagDefinition,
  type DagInput,
  type DataOf,
  type DroverEvent,
  type EventType,
  DagDefinition as DagSchema,
} from "../../contracts/index.ts";
import {
  aggregateWildcard,
  createEventStore,
  execRef,
  runRef,
  taggedLayout,
  type AggregateRef,
  type EventStore,
  type StoredEvent,
  type StreamLayout,
} from "../../streams/index.ts";

/**
 * The test plays the control plane's part around a runtime (admission's run events, recovery's
 * paused-for-recovery + requeued-for-resume, the provisioner's history responder) by appending the same events those services append,
 * through the real event store on a tagged layout. It proves nothing about those services; it lets
 * host tests drive a real runtime process through the real journal.
 */
export interface ControlPlaneDouble {
  readonly nc: NatsConnection;
  readonly layout: StreamLayout;
  readonly store: EventStore;
  /** The provisioner's history responder: stopped and started again as a provisioner's SIGKILL and restart do. */
  readonly history: HistorySwitch;
  close(): Promise<void>;
}

export async function openControlPlaneDouble(natsUrl: string, tag: string): Promise<ControlPlaneDouble> {
  const nc = await connectHarness({ servers: natsUrl, name: `host-test-${tag}` });
  const layout = taggedLayout(tag);
  // As the harness sets NATS up for the real services: the streams and the outputs stream (large outputs).
  const jsm = await jetstreamManager(nc);
  await setupNats(jsm, layout);
  // The provisioner's part a runtime needs to read its histories (streams/history-responder.ts).
  const history = historyResponderSwitch(nc, jsm, layout);
  return { nc, layout, store: createEventStore(nc, layout), history, close: () => nc.drain() };
}

/** An event as a test writer (service "test") appends it; `data` is validated by the store before anything is sent. */
export function testEvent<T extends EventType>(
  type: T,
  data: Partial<DataOf<T>> | Record<string, unknown>,
  tenantId: string,
  correlationId = "host-test",
): DroverEvent {
  return {
    eventId: randomUUID(),
    type,
    schemaVersion: 1,
    occurredAt: new Date().toISOString(),
    tenantId,
    correlationId,
    causationId: correlationId,
    writer: { service: "test", instanceId: "host-test" },
    data,
  } as unknown as DroverEvent;
}

/** A chain s01 → s02 → … of `n` compute steps of `stepMs` each (ids sort in chain order). */
export function chainDag(n: number, stepMs: number, extra: Partial<DagInput["steps"][number]> = {}): DagDefinition {
  return DagSchema.parse({
    name: `chain-${n}`,
    steps: Array.from({ length: n }, (_, i) => ({
      id: `s${String(i + 1).padStart(2, "0")}`,
      kind: "compute",
      params: { durationMs: stepMs },
      dependsOn: i === 0 ? [] : [`s${String(i).padStart(2, "0")}`],
      ...extra,
    })),
  });
}

export interface Placement {
  readonly tenantId: string;
  readonly sharedRunId: string;
  readonly localRunId: string;
  readonly runtimeInstanceId: string;
  readonly hostIncarnation: string;
  readonly transport: "http" | "grpc";
  readonly resumeExecutionId?: string;
}

/** Appends run `submitted` (first time only), `admitted` and `dispatched` as admission would; returns the `dispatched` sequence. */
export async function admitAndDispatch(cp: ControlPlaneDouble, p: Placement, dag: DagDefinition): Promise<number> {
  const ref = runRef(p.tenantId, p.sharedRunId);
  const last = await cp.store.lastSeq(ref);
  const events = [
    ...(last === 0
      ? [testEvent("run.submitted", { sharedRunId: p.sharedRunId, dag, source: "api", labels: {} }, p.tenantId)]
      : []),
    testEvent(
      "run.admitted",
      {
        runtimeInstanceId: p.runtimeInstanceId,
        localRunId: p.localRunId,
        reservationId: `res-${p.localRunId}`,
        candidates: [],
        recovery: p.resumeExecutionId !== undefined,
      },
      p.tenantId,
    ),
    testEvent(
      "run.dispatched",
      {
        runtimeInstanceId: p.runtimeInstanceId,
        localRunId: p.localRunId,
        transport: p.transport,
        hostIncarnation: p.hostIncarnation,
        ...(p.resumeExecutionId ? { resumeExecutionId: p.resumeExecutionId } : {}),
      },
      p.tenantId,
    ),
  ];
  const appended = await cp.store.appendAll(ref, events, {
    expectedSeq: last,
    msgId: `host-test:${p.localRunId}:${last}`,
  });
  return appended.at(-1)?.seq ?? 0;
}

/**
 * Recovery's in-flight transition as one atomic batch: exec `paused-for-recovery` (new epoch) and
 * run `requeued-for-resume`, each expecting the aggregate's last sequence as read. A conflict (the
 * old runtime's append landed in between) re-reads and retries a bounded number of times.
 */
export async function pauseForRecovery(
  cp: ControlPlaneDouble,
  o: {
    tenantId: string;
    sharedRunId: string;
    executionId: string;
    failedRuntimeInstanceId: string;
    failedLocalRunId: string;
    newEpoch: number;
  },
): Promise<{ execSeq: number }> {
  const forensicsId = `runtime-recovery:${o.executionId}:${o.sharedRunId}:${o.failedLocalRunId}`;
  const incidentId = `inc-${o.failedRuntimeInstanceId}`;
  for (let attempt = 1; ; attempt++) {
    const [execSeq, runSeq] = await Promise.all([
      cp.store.lastSeq(execRef(o.tenantId, o.executionId)),
      cp.store.lastSeq(runRef(o.tenantId, o.sharedRunId)),
    ]);
    try {
      const r = await cp.store.appendAtomic([
        {
          ref: execRef(o.tenantId, o.executionId),
          expectedSeq: execSeq,
          events: [
            testEvent(
              "exec.paused-for-recovery",
              { forensicsId, incidentId, failedRuntimeInstanceId: o.failedRuntimeInstanceId, newEpoch: o.newEpoch },
              o.tenantId,
            ),
          ],
        },
        {
          ref: runRef(o.tenantId, o.sharedRunId),
          expectedSeq: runSeq,
          events: [
            testEvent(
              "run.requeued-for-resume",
              {
                forensicsId,
                incidentId,
                executionId: o.executionId,
                failedRuntimeInstanceId: o.failedRuntimeInstanceId,
                failedLocalRunId: o.failedLocalRunId,
                newEpoch: o.newEpoch,
              },
              o.tenantId,
            ),
          ],
        },
      ]);
      return { execSeq: r[0]?.seq ?? 0 };
    } catch (e) {
      if (!isDroverError(e, "version-conflict") || attempt >= 5) throw e;
    }
  }
}

/** The execution journal as stored. */
export async function journal(
  cp: ControlPlaneDouble,
  tenantId: string,
  executionId: string,
): Promise<readonly StoredEvent[]> {
  return (await cp.store.read(execRef(tenantId, executionId))).events;
}

/**
 * Waits until `pred` holds for an aggregate's durable history: re-reads it whenever an event is
 * published on its subjects (only on subjects `readOn` accepts, when given), and at least every
 * `RECHECK_MS` (a core subscriber can get a message before the stream has stored it, so the read a
 * trigger causes may miss that very event, and no later trigger may come), with a deadline. Returns
 * the history that satisfied `pred`. A bench waiting for a long journal's end passes `readOn`: a
 * whole-journal read per event is O(steps²) and takes the CPU being measured.
 */
export async function waitForAggregate(
  cp: ControlPlaneDouble,
  ref: AggregateRef,
  pred: (events: readonly StoredEvent[]) => boolean,
  timeoutMs = 60_000,
  readOn?: (subject: string) => boolean,
): Promise<readonly StoredEvent[]> {
  const sub = cp.nc.subscribe(aggregateWildcard(cp.layout, ref));
  let poked = false; // a trigger came since the last read
  let wake: (() => void) | undefined;
  void (async () => {
    for await (const m of sub) {
      if (readOn && !readOn(m.subject)) continue;
      poked = true;
      wake?.();
    }
  })();
  const end = Date.now() + timeoutMs;
  const read = async () => (await cp.store.read(ref)).events;
  try {
    let events = await read();
    while (!pred(events)) {
      if (Date.now() >= end)
        throw new Error(
          `${ref.aggregate} ${ref.id} did not reach the expected state within ${timeoutMs} ms (${events.length} events, last ${events.at(-1)?.event.type})`,
        );
      if (!poked)
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, Math.min(RECHECK_MS, Math.max(0, end - Date.now())));
          wake = () => (clearTimeout(timer), resolve());
        });
      poked = false;
      wake = undefined;
      events = await read();
    }
    return events;
  } finally {
    sub.unsubscribe();
  }
}

/** The longest waitForAggregate goes without reading the aggregate again. */
const RECHECK_MS = 250;

/** waitForAggregate on an execution journal. */
export const waitForJournal = (
  cp: ControlPlaneDouble,
  tenantId: string,
  executionId: string,
  pred: (events: readonly StoredEvent[]) => boolean,
  timeoutMs = 60_000,
  readOn?: (subject: string) => boolean,
): Promise<readonly StoredEvent[]> => waitForAggregate(cp, execRef(tenantId, executionId), pred, timeoutMs, readOn);
