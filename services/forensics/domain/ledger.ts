import type { DroverEvent } from "../../../contracts/index.ts";
import type { ForensicsRow, LedgerEntry, Refs } from "../../../contracts/read-models.ts";
import { describe, isRecoveryEvent } from "./describe.ts";
import { positionOf, type Fact } from "./fact.ts";

/**
 * The tenants an event concerns (recovery.md "Safe tenants"):
 * - a tenant-scoped event (run, exec, scaleout, forensics): its own tenant, from the envelope;
 * - a runtime event: the runtime's owner tenant (none for a shared runtime), except
 * - `runtime.recovery-planned`: exactly the tenants its items name. An owner with no item on its
 *   failed runtime gets no entry, so a safe tenant's ledger holds no recovery entries at all.
 * `ownerTenantId` is the runtime's owner as folded from its `registered` event.
 */
export function tenantsConcerned(f: Fact, ownerTenantId: string | undefined): string[] {
  const e = f.event;
  if (e.type === "runtime.recovery-planned") return [...new Set(e.data.items.map((i) => i.tenantId as string))].sort();
  if (e.type.startsWith("runtime.")) {
    const owner = e.tenantId ?? ownerTenantId;
    return owner === undefined ? [] : [owner];
  }
  return e.tenantId === undefined ? [] : [e.tenantId];
}

/** A ledger entry with its run key, not yet placed in its tenant's lanes (ledger-lanes.ts). */
export type UnplacedLedgerRow = LedgerEntry & { readonly runKey?: string };

/**
 * The key a run's timeline finds the row by: the run it names, else the execution it names. A row
 * naming both names the execution's own run (run events name their run; `exec.started` the run it
 * started for; forensics rows their run), so the run's rows are those of its key and of its
 * executions' keys. Pure.
 */
export function runKeyOf(tenantId: string, refs: Refs): string | undefined {
  if (refs.sharedRunId) return `${tenantId}:r:${refs.sharedRunId}`;
  return refs.executionId ? `${tenantId}:e:${refs.executionId}` : undefined;
}

/**
 * The ledger rows of one fact: one per tenant concerned, keyed `<stream>:<seq>:<tenant>` so
 * re-applying the fact rewrites the same rows. Pure.
 */
export function ledgerRows(f: Fact, ownerTenantId: string | undefined): UnplacedLedgerRow[] {
  const tenants = tenantsConcerned(f, ownerTenantId);
  if (tenants.length === 0) return [];
  const { summary, detail, refs } = describe(f.event, f.aggregateId);
  const recovery = isRecoveryEvent(f.event);
  return tenants.map((tenantId) => {
    const scoped = f.event.type === "runtime.recovery-planned" ? plannedFor(f, tenantId) : { summary, detail };
    const runKey = runKeyOf(tenantId, refs);
    return {
      _id: `${f.stream}:${f.seq}:${tenantId}`,
      tenantId,
      stream: f.stream,
      ...positionOf(f),
      type: f.event.type,
      aggregateId: f.aggregateId,
      recovery,
      ...refs,
      ...scoped,
      ...(runKey ? { runKey } : {}),
    };
  });
}

// A tenant learns how many of its own items a plan holds, never another tenant's.
function plannedFor(f: Fact, tenantId: string): Pick<LedgerEntry, "summary" | "detail"> {
  if (f.event.type !== "runtime.recovery-planned") throw new Error("plannedFor needs a recovery-planned fact");
  const mine = f.event.data.items.filter((i) => i.tenantId === tenantId);
  const inFlight = mine.filter((i) => i.class === "in-flight-execution").length;
  return {
    summary: `recovery planned for ${mine.length} of your items`,
    detail: { itemCount: mine.length, inFlight, localQueued: mine.length - inFlight },
  };
}

/** The forensics row of a `forensics.*` fact (undefined for any other), keyed `<stream>:<seq>`. Pure. */
export function forensicsRow(f: Fact): ForensicsRow | undefined {
  if (!f.event.type.startsWith("forensics.")) return undefined;
  const e = f.event as Extract<DroverEvent, { type: `forensics.${string}` }>;
  const x = e.data;
  const { summary, detail } = describe(e, f.aggregateId);
  return {
    _id: `${f.stream}:${f.seq}`,
    tenantId: e.tenantId,
    stream: f.stream,
    ...positionOf(f),
    type: e.type,
    forensicsId: x.forensicsId,
    incidentId: x.incidentId,
    sharedRunId: x.sharedRunId,
    class: x.class,
    failedRuntimeInstanceId: x.failedRuntimeInstanceId,
    failedLocalRunId: x.failedLocalRunId,
    localRunId: x.failedLocalRunId,
    ...(x.executionId ? { executionId: x.executionId } : {}),
    summary,
    detail,
  };
}
