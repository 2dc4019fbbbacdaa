/**
 * The one way a shell reads the time: a `Clock` is injected, so tests fix it, and what a shell
 * decides with is `clock.now()` passed on as a value (domain code never reads a clock).
 */
export interface Clock {
  now(): Date;
}

/** The machine's clock. */
export const systemClock: Clock = { now: () => new Date() };
