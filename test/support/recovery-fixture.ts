import { spawn, type ChildProcess } from "node:child_process";
import { RuntimeInstanceId, type DroverEvent } from "../../contracts/index.ts";
import { randomIds, systemClock, type EnvelopeContext } from "../../platform/envelope.ts";
import { processIncarnation } from "../../platform/process-incarnation.ts";
import { processSpace } from "../../platform/process-space.ts";
import { runtimeRef, type EventStore } from "../../streams/index.ts";
import { looseEvent } from "./loose-event.ts";
import { eventually } from "./streams.ts";

/**
 * What recovery's int tests share: writers, events, `sleep` processes standing in for runtime hosts
 * (recovery only kills hosts and reads the log), a runtime made ready in the log, and a heartbeat.
 */
/** A writer; a runtime's names its RuntimeInstanceId (the run fold counts its run events only from the placed runtime). */
export const writer = (service: "test" | "runtime" | "admission", runtimeInstanceId?: string): EnvelopeContext => ({
  writer: {
    service,
    instanceId: `${service}-1`,
    ...(runtimeInstanceId ? { runtimeInstanceId: RuntimeInstanceId.parse(runtimeInstanceId) } : {}),
  },
  clock: systemClock,
  ids: randomIds,
});

export const mkEvent = (c: EnvelopeContext, type: DroverEvent["type"], data: unknown, tenantId?: string) =>
  looseEvent(c, type, data, { ...(tenantId ? { tenantId } : {}), correlationId: "c", causationId: "t" });

/** A `sleep` host process, pushed to `hosts` (for the teardown), once its incarnation can be read. */
export async function startSleepHost(hosts: ChildProcess[]): Promise<ChildProcess> {
  const h = spawn("sleep", ["600"], { stdio: "ignore" });
  hosts.push(h);
  await eventually("host running", async () => {
    try {
      return processIncarnation(h.pid!);
    } catch {
      return undefined;
    }
  });
  return h;
}

/**
 * Registers `rt` of `tenantId` on the process host `pid` and publishes its capacity (with an endpoint
 * unless `endpoint` is false), as the provisioner would; returns the host incarnation. The host's
 * process space is this one (the test's children) unless `node` names another, with `incarnation`.
 */
export async function readyProcessRuntime(
  store: EventStore,
  o: {
    controlPlaneId: string;
    rt: string;
    pid: number;
    tenantId: string;
    /** false: no endpoint published; a string: that endpoint (default http://127.0.0.1:1). */
    endpoint?: boolean | string;
    node?: string;
    incarnation?: string;
  },
): Promise<string> {
  const inc = o.incarnation ?? processIncarnation(o.pid);
  const c = writer("test");
  await store.appendAll(
    runtimeRef(o.rt),
    [
      mkEvent(c, "runtime.registered", {
        controlPlaneId: o.controlPlaneId,
        tenantId: o.tenantId,
        isolationMode: "dedicated",
        allowSharedFallback: false,
        pool: "default",
        hostProvider: "process",
        transport: "http",
        sizing: { workers: 1, maxConcurrentRuns: 1, localQueueCapacity: 2, maxWorkersPerRun: 1 },
        requiredLayers: ["resource", "host", "endpoint", "command"],
      }),
      mkEvent(c, "runtime.host-started", {
        hostIncarnation: inc,
        pid: o.pid,
        node: o.node ?? processSpace(),
        convergence: "created",
      }),
      ...(o.endpoint === false
        ? []
        : [
            mkEvent(c, "runtime.endpoint-published", {
              endpoint: typeof o.endpoint === "string" ? o.endpoint : "http://127.0.0.1:1",
              aliases: [],
              routingHeader: "x-drover-runtime-instance-id",
              hostIncarnation: inc,
            }),
          ]),
      mkEvent(c, "runtime.capacity-published", { hostIncarnation: inc }),
    ],
    { expectedSeq: 0 },
  );
  return inc;
}

/** A heartbeat of `rt` as JSON (the runtime's payload), idle unless `patch` says otherwise. */
export const heartbeatJson = (rt: string, hostIncarnation: string, beat: number, patch: object = {}): string =>
  JSON.stringify({
    type: "heartbeat",
    runtimeInstanceId: rt,
    hostIncarnation,
    beat,
    at: new Date().toISOString(),
    workers: 1,
    activeWorkers: 0,
    availableWorkers: 1,
    queuedRuns: 0,
    runningRuns: 0,
    availableSlots: 3,
    paused: false,
    draining: false,
    ...patch,
  });
