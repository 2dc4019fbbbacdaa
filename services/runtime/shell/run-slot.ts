import type { Clock } from "../../../platform/clock.ts";

/**
 * One execution's run slot on its runtime (one of `maxConcurrentRunsPerInstance`). An execution
 * whose only running steps are waits listening for their signals parks: it gives the slot back
 * while it waits, and takes one again before it goes on (docs/control-flow.md "What a wait holds").
 * The slot is local accounting only: nothing is journaled for it, and recovery never reads it.
 */
export interface RunSlot {
  /** Gives the slot back (nothing when not held). */
  park(): void;
  /** Takes a slot again: at once when one is free, else ahead of every queued new run; rejects when `signal` aborts first. */
  unpark(signal: AbortSignal): Promise<void>;
}

export interface ParkContext {
  readonly executionId: string;
  readonly waits: readonly string[];
  readonly clock: Clock;
  readonly log: (fields: Record<string, unknown>) => void;
}

/**
 * Parks `slot` while `changed` waits, then, when the execution `goesOn` (not cancelled, failed or
 * past its deadline: those end it without a slot), takes a slot again before returning. Logs
 * `execution-parked` and `execution-unparked` (how long it was parked, how long it waited for a slot).
 */
export async function parked(
  slot: RunSlot,
  ctx: ParkContext,
  changed: () => Promise<void>,
  goesOn: () => boolean,
  signal: AbortSignal,
): Promise<void> {
  slot.park();
  const parkedAt = ctx.clock.now().getTime();
  ctx.log({ event: "execution-parked", executionId: ctx.executionId, waits: ctx.waits });
  await changed();
  if (!goesOn()) return;
  const woke = ctx.clock.now().getTime();
  if (
    !(await slot.unpark(signal).then(
      () => true,
      () => false,
    ))
  )
    return;
  const now = ctx.clock.now().getTime();
  ctx.log({
    event: "execution-unparked",
    executionId: ctx.executionId,
    parkedMs: now - parkedAt,
    slotWaitMs: now - woke,
  });
}
