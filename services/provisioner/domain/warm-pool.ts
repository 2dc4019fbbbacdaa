import type { HostProvider, ReadinessLayer } from "../../../contracts/index.ts";
import type { Roster, RuntimeSummary } from "./runtime-roster.ts";

/** Layers a pool member proves before it is claimable: every layer but the tenant binding's `command`. */
export const POOL_LAYERS: readonly ReadinessLayer[] = ["resource", "host", "endpoint"];
/** Prefix of a pool member's id (`pool-<12 [a-z0-9]>`); members never count against a tenant's prefix. */
export const POOL_MEMBER_PREFIX = "pool";

/** A member that is still in the pool: registered, not claimed, not ended (ready or still starting). */
const inPool = (s: RuntimeSummary, provider: HostProvider, controlPlaneId?: string): boolean =>
  !!s.pool &&
  s.pool.provider === provider &&
  (controlPlaneId === undefined || s.pool.controlPlaneId === controlPlaneId) &&
  !s.pool.claimedFor &&
  s.endedBy === undefined;

/**
 * Members a scale-out may claim (pure): in the pool, `pool-member-ready` recorded (every pool layer
 * passed), oldest first. A member once claimed is never listed again, whatever happens to the
 * runtime it was bound to: a host that served a tenant never returns to the pool.
 */
export function claimableMembers(r: Roster, provider: HostProvider, controlPlaneId?: string): RuntimeSummary[] {
  return [...r.runtimes.values()]
    .filter(
      (s) =>
        inPool(s, provider, controlPlaneId) && s.pool!.bindEndpoint !== undefined && s.hostIncarnation !== undefined,
    )
    .filter((s) => POOL_LAYERS.every((l) => s.pool!.layersPassed.includes(l)))
    .sort((a, b) => a.lastSeq - b.lastSeq);
}

/**
 * How many members to start so the pool holds `size` (pure): members starting count as held. `owns`
 * says which members this provisioner started (a pool is N per provisioner): a member it cannot bind —
 * another replica's, or one a stopped or SIGKILLed provisioner left in the log — never fills its pool
 * (before, such members were counted as held for ever and a restarted provisioner's pool never refilled).
 */
export const refillCount = (
  r: Roster,
  provider: HostProvider,
  size: number,
  controlPlaneId?: string,
  owns: (memberId: string) => boolean = () => true,
): number =>
  Math.max(
    0,
    size -
      [...r.runtimes.values()].filter((s) => inPool(s, provider, controlPlaneId) && owns(s.runtimeInstanceId)).length,
  );
