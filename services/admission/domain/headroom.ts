/**
 * Headroom on a shared runtime (pure; docs/security.md "Floods"): its last `headroom` free places
 * (slots plus local queue) are kept for tenants holding fewer than `headroom` runs on it. A tenant
 * holding that many or more takes a place only while more than `headroom` stay free, so a flooding
 * tenant fills a shared runtime up to all but `headroom` places and another tenant's next run finds
 * a place at once instead of waiting for one of the flood's to end. 0 turns it off.
 */
export function mayTakeSharedPlace(held: number, free: number, headroom: number): boolean {
  return free > 0 && (headroom <= 0 || held < headroom || free > headroom);
}

/** Why a tenant may not take a place the runtime still has (for the queue reason's detail). */
export const headroomReason = (held: number, free: number, headroom: number): string =>
  `headroom: ${free} free place(s), the last ${headroom} kept for tenants holding fewer than ${headroom} here (this tenant holds ${held})`;
