import type { Aggregate, EventType } from "../contracts/index.ts";
import type { StreamLayout } from "./layout.ts";

/**
 * One aggregate instance. Tenant-scoped aggregates carry their tenant as the scope token:
 * `<prefix>.<aggregate>.<tenant>.<id>.<event>`; runtimes are not tenant-scoped:
 * `<prefix>.runtime.<runtimeInstanceId>.<event>`.
 */
export type AggregateRef =
  | {
      readonly aggregate: "run" | "exec" | "scaleout" | "forensics" | "schedule" | "flowkey" | "quota" | "worker";
      readonly tenantId: string;
      readonly id: string;
    }
  | { readonly aggregate: "runtime"; readonly id: string };

export const runRef = (tenantId: string, sharedRunId: string): AggregateRef => ({
  aggregate: "run",
  tenantId,
  id: sharedRunId,
});
export const execRef = (tenantId: string, executionId: string): AggregateRef => ({
  aggregate: "exec",
  tenantId,
  id: executionId,
});
export const scaleOutRef = (tenantId: string, requestId: string): AggregateRef => ({
  aggregate: "scaleout",
  tenantId,
  id: requestId,
});
export const forensicsRef = (tenantId: string, forensicsId: string): AggregateRef => ({
  aggregate: "forensics",
  tenantId,
  id: forensicsId,
});
export const scheduleRef = (tenantId: string, scheduleId: string): AggregateRef => ({
  aggregate: "schedule",
  tenantId,
  id: scheduleId,
});
export const flowKeyRef = (tenantId: string, flowKeyId: string): AggregateRef => ({
  aggregate: "flowkey",
  tenantId,
  id: flowKeyId,
});
/** The runtime limit of one runtime prefix of a tenant (contracts/events-quota.ts). */
export const runtimeQuotaRef = (tenantId: string, runtimePrefix: string): AggregateRef => ({
  aggregate: "quota",
  tenantId,
  id: runtimePrefix,
});
/** The tenant's worker deploys (contracts/events-worker.ts): one aggregate per tenant. */
export const workerDeploysRef = (tenantId: string): AggregateRef => ({
  aggregate: "worker",
  tenantId,
  id: "deploys",
});
export const runtimeRef = (runtimeInstanceId: string): AggregateRef => ({
  aggregate: "runtime",
  id: runtimeInstanceId,
});

/** Subject prefix of the aggregate instance (no trailing dot). */
export function aggregateSubject(layout: StreamLayout, ref: AggregateRef): string {
  return ref.aggregate === "runtime"
    ? `${layout.eventPrefix}.runtime.${ref.id}`
    : `${layout.eventPrefix}.${ref.aggregate}.${ref.tenantId}.${ref.id}`;
}

/** Wildcard covering every event of the aggregate instance: the OCC scope of its appends. */
export const aggregateWildcard = (layout: StreamLayout, ref: AggregateRef): string =>
  `${aggregateSubject(layout, ref)}.>`;

/** Subject of one event of the aggregate; `type` is `<aggregate>.<name>` and must match the ref's aggregate. */
export function eventSubject(layout: StreamLayout, ref: AggregateRef, type: EventType): string {
  const [agg, name] = type.split(".") as [Aggregate, string];
  if (agg !== ref.aggregate) throw new Error(`event ${type} does not belong to a ${ref.aggregate} aggregate`);
  return `${aggregateSubject(layout, ref)}.${name}`;
}

/** Filter for one event name of an aggregate type across tenants/ids, e.g. every `scaleout.requested`. */
export function eventTypeFilter(layout: StreamLayout, type: EventType): string {
  const [agg, name] = type.split(".") as [Aggregate, string];
  return agg === "runtime" ? `${layout.eventPrefix}.runtime.*.${name}` : `${layout.eventPrefix}.${agg}.*.*.${name}`;
}

/** Everything of one tenant (tenant-scoped aggregates only): what a tenant's event feed may read. */
export const tenantFilter = (layout: StreamLayout, tenantId: string): string => `${layout.eventPrefix}.*.${tenantId}.>`;

export const heartbeatSubject = (layout: StreamLayout, runtimeInstanceId: string): string =>
  `${layout.heartbeatPrefix}.${runtimeInstanceId}`;
