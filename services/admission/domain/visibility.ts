import { assertNever } from "../../../contracts/assert-never.ts";
import type { IsolationMode, TenantSettings } from "../../../contracts/index.ts";

/** What visibility needs to know about a runtime: its registration's isolation facts. */
export interface IsolationFacts {
  readonly isolationMode: IsolationMode;
  readonly tenantId?: string;
  readonly tenantGroupId?: string;
}

/**
 * Whether a runtime may run work of `tenant` (admission-and-capacity.md "Visibility"). Evaluated
 * from the run's own tenant settings, always: there is no "no context, see everything" path.
 * - shared runtime: the tenant is shared, or hybrid/dedicated with allowSharedFallback;
 * - dedicated/hybrid runtime: same tenant, or same non-empty tenant group; unowned is visible to nobody.
 * Labels, namespaces and metadata play no part.
 */
export function isVisible(rt: IsolationFacts, tenant: TenantSettings): boolean {
  switch (rt.isolationMode) {
    case "shared":
      return tenant.isolationMode === "shared" || tenant.allowSharedFallback;
    case "dedicated":
    case "hybrid": {
      if (!rt.tenantId && !rt.tenantGroupId) return false;
      if (rt.tenantId && rt.tenantId === tenant.tenantId) return true;
      return Boolean(rt.tenantGroupId && tenant.tenantGroupId && rt.tenantGroupId === tenant.tenantGroupId);
    }
    default:
      return assertNever(rt.isolationMode, "isolation mode");
  }
}

/** True when the runtime is owned by the tenant's scope (dedicated/hybrid), for preferDedicatedCapacity. */
export const isOwnedBy = (rt: IsolationFacts, tenant: TenantSettings): boolean =>
  rt.isolationMode !== "shared" && isVisible(rt, tenant);
