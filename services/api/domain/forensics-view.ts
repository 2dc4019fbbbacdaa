import type { IncidentDoc, IncidentItem, LedgerEntry, LedgerRow } from "../../../contracts/read-models.ts";

/** A stored row as answered: Mongo's `_id` becomes `id`, so answers do not depend on the storage's naming. */
export function publicRow<T extends { readonly _id: string }>(d: T): Omit<T, "_id"> & { readonly id: string } {
  const { _id, ...rest } = d;
  return { id: _id, ...rest };
}

/** A ledger row as answered: an entry, without where the projector placed it (lanes, page, run key). */
export function publicLedgerRow(r: LedgerRow): ReturnType<typeof publicRow<LedgerEntry>> {
  const { before: _before, page: _page, runKey: _runKey, ...entry } = r;
  return publicRow(entry);
}

/** An incident as one tenant may see it: the runtime's failure facts and that tenant's own items, nothing of other tenants. */
export interface TenantIncident {
  readonly incidentId: string;
  readonly runtimeInstanceId: string;
  readonly status: IncidentDoc["status"];
  readonly suspected?: IncidentDoc["suspected"];
  readonly fenced?: IncidentDoc["fenced"];
  readonly fenceFailures: IncidentDoc["fenceFailures"];
  /** The plan as it concerns the tenant: its own item count. */
  readonly planned?: {
    readonly seq: number;
    readonly at: string;
    readonly storedAt: string;
    readonly itemCount: number;
  };
  readonly items: readonly (Omit<IncidentItem, "_id"> & { readonly id: string })[];
}

/**
 * The incident as `tenantId` may see it, or undefined when the incident does not concern the
 * tenant (no item of its own: a safe tenant learns nothing, not even that the incident exists).
 * Other tenants' items (filtered here again, whatever `allItems` holds), the owner and the list of
 * impacted tenants are left out. Pure.
 */
export function incidentForTenant(
  doc: IncidentDoc | undefined,
  allItems: readonly IncidentItem[],
  tenantId: string,
): TenantIncident | undefined {
  if (doc === undefined || !doc.tenantIds.includes(tenantId)) return undefined;
  const items = allItems.filter((i) => i.tenantId === tenantId && i.incidentId === doc.incidentId);
  return {
    incidentId: doc.incidentId,
    runtimeInstanceId: doc.runtimeInstanceId,
    status: doc.status,
    ...(doc.suspected ? { suspected: doc.suspected } : {}),
    ...(doc.fenced ? { fenced: doc.fenced } : {}),
    fenceFailures: doc.fenceFailures,
    ...(doc.planned
      ? {
          planned: {
            seq: doc.planned.seq,
            at: doc.planned.at,
            storedAt: doc.planned.storedAt,
            itemCount: items.length,
          },
        }
      : {}),
    items: items.map(publicRow),
  };
}
