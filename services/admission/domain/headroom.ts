/**
 * Headroom on a shared runtime (pure; docs/security.md "Floods"): its last `headroom` free places
 * (slots plus local queue) are kept for tenants holding fewer than `headroom` runs on it, and for a
 * tenant with no backlog (at most `headroom` runs waiting for a place). A tenant holding that many
 * and with a backlog takes a place only while more than `headroom` stay free, so a flooding tenant
 * fills a shared runtime up to all but `headroom` places and another tenant's next run finds a place
 * at once instead of waiting for one of the flood's to end — also when that tenant's earlier runs
 * are still there (on a busy machine a quiet tenant's runs linger, and holding `headroom` of them
 * used to shut it out of the kept places). Two tenants with backlogs share by weight (fair-queue.ts),
 * neither taking the kept places ahead of its turn: a kept place goes only to a tenant that is `due`
 * (FairShare.dueAgainst: no tenant refused a kept place in this pass would start its next placement
 * before this one's; a tenant with no such rival always is). Without that, a
 * weight-1 tenant whose runs the runtime starts first (fewest going, local-queue.ts) held fewer than
 * `headroom` and took every kept place, each moving the virtual clock past the weight-3 tenant, whose
 * lag was forgiven (its ratio fell from 3 to 2.2–2.7). 0 turns it off.
 */
export function mayTakeSharedPlace(
  held: number,
  free: number,
  headroom: number,
  waiting = Infinity,
  due = true,
): boolean {
  return free > 0 && (headroom <= 0 || free > headroom || (due && (held < headroom || waiting <= headroom)));
}

/** Why a tenant may not take a place the runtime still has (for the queue reason's detail). */
export const headroomReason = (held: number, free: number, headroom: number, waiting: number, due = true): string =>
  `headroom: ${free} free place(s), the last ${headroom} kept for tenants holding fewer than ${headroom} here or with at most ${headroom} runs waiting, in their turn of the fair share (this tenant holds ${held}, ${waiting} waiting${due ? "" : ", ahead of its share"})`;
