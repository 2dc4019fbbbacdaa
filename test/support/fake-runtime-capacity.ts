import type { JetStreamClient } from "@nats-io/jetstream";
import type { DroverEvent, IsolationMode, Transport } from "../../contracts/index.ts";
import { randomIds, systemClock, type EnvelopeContext } from "../../platform/envelope.ts";
import { looseEvent } from "./loose-event.ts";
import { heartbeatSubject, runtimeRef, type EventStore, type StreamLayout } from "../../streams/index.ts";

/**
 * Publishes, through the real event store and the real HEARTBEATS stream, the events a
 * provisioner writes for a ready runtime plus its heartbeats — for tests of admission and capacity
 * that need capacity without a runtime process. It proves nothing about hosts or the runtime.
 */
export interface FakeRuntimeSpec {
  readonly runtimeInstanceId: string;
  readonly controlPlaneId: string;
  readonly isolationMode: IsolationMode;
  readonly tenantId?: string;
  readonly transport?: Transport;
  readonly slots?: number;
  readonly endpoint?: string;
}

const provisioner: EnvelopeContext = {
  writer: { service: "test", instanceId: "fake-provisioner" },
  clock: systemClock,
  ids: randomIds,
};
export const FAKE_INCARNATION = "pid:1:1";

export async function publishReadyRuntime(store: EventStore, spec: FakeRuntimeSpec): Promise<void> {
  const rt = spec.runtimeInstanceId;
  const mk = (type: DroverEvent["type"], data: unknown) =>
    looseEvent(provisioner, type, data, { correlationId: rt, causationId: "test" });
  const events = [
    mk("runtime.registered", {
      controlPlaneId: spec.controlPlaneId,
      ...(spec.tenantId ? { tenantId: spec.tenantId } : {}),
      isolationMode: spec.isolationMode,
      allowSharedFallback: false,
      pool: "default",
      hostProvider: "process",
      transport: spec.transport ?? "http",
      sizing: { workers: 1, maxConcurrentRuns: 1, localQueueCapacity: (spec.slots ?? 3) - 1, maxWorkersPerRun: 1 },
      requiredLayers: ["resource", "host", "endpoint", "command"],
    }),
    mk("runtime.host-started", { hostIncarnation: FAKE_INCARNATION, pid: 1, convergence: "created" }),
    ...["resource", "host", "endpoint", "command"].map((layer) =>
      mk("runtime.readiness-layer-passed", { layer, hostIncarnation: FAKE_INCARNATION, detail: "" }),
    ),
    mk("runtime.endpoint-published", {
      endpoint: spec.endpoint ?? `http://127.0.0.1:1/${rt}`,
      aliases: [],
      routingHeader: "x-drover-runtime-instance-id",
      hostIncarnation: FAKE_INCARNATION,
    }),
    mk("runtime.capacity-published", { hostIncarnation: FAKE_INCARNATION }),
  ];
  await store.appendAll(runtimeRef(rt), events, { expectedSeq: await store.lastSeq(runtimeRef(rt)) });
}

/** Publishes one heartbeat with `beat` and `slots` free slots. */
export async function publishBeat(
  js: JetStreamClient,
  layout: StreamLayout,
  rt: string,
  beat: number,
  slots: number,
  at = new Date(),
): Promise<void> {
  await js.publish(
    heartbeatSubject(layout, rt),
    JSON.stringify({
      type: "heartbeat",
      runtimeInstanceId: rt,
      hostIncarnation: FAKE_INCARNATION,
      beat,
      at: at.toISOString(),
      workers: 1,
      activeWorkers: 0,
      availableWorkers: 1,
      queuedRuns: 0,
      runningRuns: 0,
      availableSlots: slots,
      paused: false,
      draining: false,
    }),
  );
}
