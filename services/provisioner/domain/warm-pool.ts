import type { HostProvider, ReadinessLayer } from "../../../contracts/index.ts";
import { hasPrefix, type Roster, type RuntimeSummary } from "./runtime-roster.ts";

/** Layers a pool member proves before it is claimable: every layer but the tenant binding's `command`. */
export const POOL_LAYERS: readonly ReadinessLayer[] = ["resource", "host", "endpoint"];
/**
 * Layers a claim records for the runtime it registers, in the claim's own batch (pure). They were
 * proven when the member became ready, and the claim is conditional on the member's last sequence,
 * so no exit of that incarnation is in the log since. A process member's `resource` (its child
 * spawned) and `host` (that exact incarnation alive); the bind then proves `endpoint` (the same
 * incarnation answers and listens on the bound port) and the provisioner `command`, before capacity.
 * A Kubernetes member's `resource` (its Pod created, the exact UID the claim's `host-started` names;
 * a warm member has no Service or route of its own); its `host` is its Pod's readiness, which after a
 * binding is the bound runtime's: proven by the bind, not carried (docs/decisions.md).
 */
export const claimCarriedLayers = (provider: HostProvider): readonly ReadinessLayer[] =>
  provider === "process" ? ["resource", "host"] : ["resource"];

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

/** How a refill round starts pool members: how many at once, and whether it first waits for the starts in flight. */
export interface RefillPace {
  readonly starts: number;
  readonly yields: boolean;
}

/**
 * The refill's pace (pure). Urgent — the pool holds (ready or starting) under a quarter of its size,
 * or a scale-out waits for a member or a start slot — : up to twice the start slots at once, without
 * waiting for the binds in flight (the members are for the scale-outs that come next, and a P=20
 * proof's fleet drains a pool of 64 to ~4 before its kills). Otherwise as many as the start slots,
 * each after the binds and host starts in flight: booting beside a burst of binds, members took the
 * CPU the binds needed (busy-starts.ts).
 */
export function refillPace(held: number, size: number, startSlots: number, waiting: number): RefillPace {
  const urgent = held < Math.ceil(size / 4) || waiting > 0;
  return urgent ? { starts: 2 * startSlots, yields: false } : { starts: startSlots, yields: true };
}

/**
 * Members a first-placement scale-out leaves to replacements (pure): a quarter of the pool. A
 * replacement (a recovery scale-out, `scaleout.requested` `replaces`) may claim every member; a
 * first placement claims only while more than this many are claimable, else it cold-starts: the
 * runs of a lost runtime are already late, a first placement's are not yet.
 */
export const reservedForReplacements = (size: number): number => Math.floor(size / 4);

/**
 * Whether a scale-out of `prefix` replaces a lost runtime (pure): its request names one (`replaces`,
 * recovery's early request), or the prefix's runtime registered last was lost (its host exited, or it
 * was fenced). Admission's request for the runs a lost runtime held names none: when it is appended
 * before recovery's (the same dedupe key, one request), recovery's is never made; planned as a first
 * placement, it got no member from the replacements' reserve and waited for a start slot behind the
 * first placements' cold starts (P=20 proof, session 31: 44 s before its registration; session 30's
 * 22 s tail looks the same). Once a runtime of the prefix registers after the loss (the replacement),
 * or the last one retired (a drain), the prefix's next request is a first placement again; a start that
 * failed replaced nothing. Registration order is the roster's map order (first event seen; a snapshot
 * keeps it); a dropped ended runtime read back comes last (roster-view.ts), rare and only ever ended.
 */
export function replacesLost(r: Roster, prefix: string, replaces?: string): boolean {
  if (replaces !== undefined) return true;
  let last: RuntimeSummary | undefined;
  for (const s of r.runtimes.values())
    if (!s.pool && s.endedBy !== "host-start-failed" && hasPrefix(s.runtimeInstanceId, prefix)) last = s;
  return last?.endedBy === "host-exited" || last?.endedBy === "fenced";
}
