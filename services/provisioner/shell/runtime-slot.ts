import { isDroverError, type DataOf } from "../../../contracts/index.ts";
import { runtimeQuotaRef, runtimeRef, type AggregateRef, type BatchEntry } from "../../../streams/index.ts";
import { stamp, type Origin, type ProvisionerDeps } from "./context.ts";

/**
 * The tenant's runtime limit across provisioner replicas (docs/decisions.md "runtime limit"). A
 * plan counts the prefix's live runtimes from the roster; the start it decides is appended in one
 * atomic batch with `quota runtime-slot-taken` on the prefix's aggregate, conditional on that
 * aggregate's last sequence as read *before* the roster caught up. Every start of the prefix takes
 * a slot, so a start whose batch commits was counted against every earlier start: two replicas that
 * counted the same roster cannot both pass, the second gets a version conflict and plans again on
 * a roster that holds the first. A slot comes back when its runtime ends (its own events): no
 * release event, nothing to lose.
 */
export interface SlotClaim {
  readonly ref: AggregateRef;
  /** The quota aggregate's last sequence, read before the roster the plan counted. */
  readonly expectedSeq: number;
}

/** Another start of the prefix (or a suffix collision) committed first: plan again on a fresh roster. */
export class PlanAgain extends Error {
  constructor(readonly why: string) {
    super(why);
    this.name = "PlanAgain";
  }
}

/** Reads the prefix's quota sequence; call it before the roster the plan will count. */
export async function readSlot(d: ProvisionerDeps, tenantId: string, prefix: string): Promise<SlotClaim> {
  const ref = runtimeQuotaRef(tenantId, prefix);
  return { ref, expectedSeq: await d.store.lastSeq(ref) };
}

/** The batch entry that takes the slot for `runtimeInstanceId`. */
export function slotEntry(
  d: ProvisionerDeps,
  slot: SlotClaim,
  taken: DataOf<"quota.runtime-slot-taken">,
  origin: Origin,
): BatchEntry {
  return {
    ref: slot.ref,
    expectedSeq: slot.expectedSeq,
    events: [stamp(d, "quota.runtime-slot-taken", taken, origin)],
  };
}

/**
 * Looks at a version conflict of a start batch: the slot moved (another start of the prefix
 * committed since it was read) → `PlanAgain`; the runtime id exists already (a suffix collision) →
 * `PlanAgain` with a new suffix; neither → undefined (the caller's other entry, e.g. a warm member).
 * Anything but a version conflict is rethrown.
 */
export async function lookAtConflict(
  d: ProvisionerDeps,
  e: unknown,
  slot: SlotClaim,
  runtimeInstanceId: string,
): Promise<PlanAgain | undefined> {
  if (!isDroverError(e, "version-conflict")) throw e;
  const now = await d.store.lastSeq(slot.ref);
  if (now !== slot.expectedSeq) return new PlanAgain(`runtime slot moved from ${slot.expectedSeq} to ${now}`);
  if ((await d.store.lastSeq(runtimeRef(runtimeInstanceId))) > 0)
    return new PlanAgain(`runtime id ${runtimeInstanceId} exists already`);
  return undefined;
}
