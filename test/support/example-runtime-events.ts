/** One valid example of every `scaleout.*` and `runtime.*` event (spread into example-events.ts's EXAMPLE_BUILDERS). */
import type { EventType } from "../../contracts/index.ts";
import { AT, envelope, forensicsIds, ids, reason, type Builders } from "./example-events.ts";

const sizing = { workers: 2, maxConcurrentRuns: 2, localQueueCapacity: 8, maxWorkersPerRun: 1 };

export const RUNTIME_BUILDERS = {
  "scaleout.requested": () => ({
    ...envelope("scaleout.requested"),
    tenantId: ids.tenant,
    data: {
      requestId: ids.scaleOut,
      controlPlaneId: ids.controlPlane,
      dedupeKey: "cp-test/tenant-a/rt-tenant-a/no-visible-capacity",
      reason: reason("no-visible-capacity"),
      policy: {
        isolationMode: "dedicated",
        allowSharedFallback: false,
        runtimeInstanceIdPrefix: "rt-tenant-a",
        maxRuntimeInstances: 2,
      },
      sizing,
      providerHint: "process",
      transport: "http",
      expiresAt: AT,
    },
  }),
  "scaleout.observed": () => ({
    ...envelope("scaleout.observed"),
    tenantId: ids.tenant,
    data: { provisionerInstanceId: "prov-1" },
  }),
  "scaleout.fulfilled": () => ({
    ...envelope("scaleout.fulfilled"),
    tenantId: ids.tenant,
    data: { runtimeInstanceId: ids.runtime },
  }),
  "scaleout.rejected": () => ({
    ...envelope("scaleout.rejected"),
    tenantId: ids.tenant,
    data: { reason: reason("scale-out-limit-reached"), runtimeInstanceId: ids.runtime },
  }),
  "scaleout.expired": () => ({ ...envelope("scaleout.expired"), tenantId: ids.tenant, data: {} }),
  "scaleout.cancelled": () => ({ ...envelope("scaleout.cancelled"), tenantId: ids.tenant, data: { reason: "" } }),

  "runtime.registered": () => ({
    ...envelope("runtime.registered"),
    data: {
      controlPlaneId: ids.controlPlane,
      tenantId: ids.tenant,
      isolationMode: "dedicated",
      allowSharedFallback: false,
      pool: "default",
      hostProvider: "process",
      transport: "http",
      sizing,
      requiredLayers: ["resource", "host", "endpoint", "command", "published"],
      scaleOutRequestId: ids.scaleOut,
    },
  }),
  "runtime.host-start-requested": () => ({ ...envelope("runtime.host-start-requested"), data: { attempt: 1 } }),
  "runtime.host-started": () => ({
    ...envelope("runtime.host-started"),
    data: {
      hostIncarnation: ids.pod,
      podUid: "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0",
      podName: "rt-tenant-a-0001-0123456789ab",
      namespace: "drover",
      node: "node-1",
      convergence: "converged",
      convergenceSource: "existing pod with matching labels",
    },
  }),
  "runtime.host-start-failed": () => ({
    ...envelope("runtime.host-start-failed"),
    data: { reason: reason("pod-readiness-timeout"), layer: "host" },
  }),
  "runtime.readiness-layer-passed": () => ({
    ...envelope("runtime.readiness-layer-passed"),
    data: { layer: "command", hostIncarnation: ids.host, detail: "GetQueueStatus answered" },
  }),
  "runtime.endpoint-published": () => ({
    ...envelope("runtime.endpoint-published"),
    data: {
      endpoint: "http://127.0.0.1:41234",
      aliases: ["http://localhost:41234"],
      route: { kind: "HTTPRoute", name: "rt-tenant-a-0001", namespace: "drover" },
      routingHeader: "x-drover-runtime-instance-id",
      hostIncarnation: ids.host,
    },
  }),
  "runtime.capacity-published": () => ({
    ...envelope("runtime.capacity-published"),
    data: { hostIncarnation: ids.host },
  }),
  "runtime.draining": () => ({ ...envelope("runtime.draining"), data: { reason: "SIGTERM" } }),
  "runtime.suspected": () => ({
    ...envelope("runtime.suspected"),
    data: {
      incidentId: ids.incident,
      reason: reason("heartbeat-stale", "last beat 9 s ago"),
      hostIncarnation: ids.host,
    },
  }),
  "runtime.fenced": () => ({
    ...envelope("runtime.fenced"),
    data: {
      incidentId: ids.incident,
      hostIncarnation: ids.host,
      proof: { kind: "process-exit", pid: 4242, exitCode: null, signal: "SIGKILL" },
    },
  }),
  "runtime.recovery-planned": () => ({
    ...envelope("runtime.recovery-planned"),
    data: {
      incidentId: ids.incident,
      items: [
        {
          forensicsId: forensicsIds.inFlight,
          tenantId: ids.tenant,
          sharedRunId: ids.sharedRun,
          localRunId: ids.localRun,
          executionId: ids.execution,
          class: "in-flight-execution",
        },
        {
          forensicsId: forensicsIds.localQueued,
          tenantId: ids.tenant,
          sharedRunId: ids.sharedRun,
          localRunId: ids.localRun,
          class: "local-queued",
        },
      ],
    },
  }),
  "runtime.fence-failed": () => ({
    ...envelope("runtime.fence-failed"),
    data: {
      incidentId: ids.incident,
      hostIncarnation: ids.host,
      reason: reason("fence-timeout", "pid still running after 15000 ms"),
      attempt: 1,
    },
  }),
  "runtime.host-exited": () => ({
    ...envelope("runtime.host-exited"),
    data: {
      hostIncarnation: ids.host,
      kind: "exited",
      exitCode: null,
      signal: "SIGKILL",
      detail: "child exit observed",
    },
  }),
  "runtime.retired": () => ({ ...envelope("runtime.retired"), data: { reason: "drained" } }),
  "runtime.pool-member-registered": () => ({
    ...envelope("runtime.pool-member-registered"),
    data: {
      controlPlaneId: ids.controlPlane,
      hostProvider: "process",
      pool: "default",
      requiredLayers: ["resource", "host", "endpoint"],
    },
  }),
  "runtime.pool-member-ready": () => ({
    ...envelope("runtime.pool-member-ready"),
    data: { hostIncarnation: ids.host, bindEndpoint: "http://127.0.0.1:40123" },
  }),
  "runtime.pool-member-claimed": () => ({
    ...envelope("runtime.pool-member-claimed"),
    data: {
      runtimeInstanceId: ids.runtime,
      hostIncarnation: ids.host,
      scaleOutRequestId: ids.scaleOut,
      tenantId: ids.tenant,
    },
  }),
} satisfies Pick<Builders, Extract<EventType, `scaleout.${string}` | `runtime.${string}`>>;
