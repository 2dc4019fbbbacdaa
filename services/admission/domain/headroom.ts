/**
 * Headroom on a shared runtime (pure; docs/security.md "Floods"): its last `headroom` free places
 * (slots plus local queue) are kept for tenants holding fewer than `headroom` runs on it, and for a
 * tenant that, once placed, still holds fewer per unit of weight than another tenant there
 * (`behind`). A tenant holding the most there takes a place only while more than `headroom` stay
 * free, so a flooding tenant fills a shared runtime up to all but `headroom` places and another
 * tenant's next run finds a place at once instead of waiting for one of the flood's to end — also
 * when that tenant's earlier runs are still there (on a busy machine a quiet tenant's runs linger,
 * and holding `headroom` of them used to shut it out of the kept places). 0 turns it off.
 */
export function mayTakeSharedPlace(held: number, free: number, headroom: number, behind = false): boolean {
  return free > 0 && (headroom <= 0 || held < headroom || free > headroom || behind);
}

/**
 * Whether a tenant holding `held` runs on a runtime (weight `weight`) would, with one more, still hold
 * fewer per unit of weight than the tenant holding the most there besides it (`othersMost`: held / weight).
 */
export const behindOthers = (held: number, weight: number, othersMost: number): boolean =>
  (held + 1) / weight < othersMost;

/** Why a tenant may not take a place the runtime still has (for the queue reason's detail). */
export const headroomReason = (held: number, free: number, headroom: number): string =>
  `headroom: ${free} free place(s), the last ${headroom} kept for tenants holding fewer than ${headroom} here or behind another tenant here (this tenant holds ${held})`;
