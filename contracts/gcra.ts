/** The outcome of one GCRA check: admit (with the new theoretical arrival time) or wait until a time. */
export type GcraOutcome =
  { readonly ok: true; readonly tatMs: number } | { readonly ok: false; readonly retryAtMs: number };

/**
 * The generic cell rate algorithm (pure), as a virtual scheduler: each admission moves the key's
 * theoretical arrival time (TAT) on by the emission interval T = 1000 / perSecond ms; an admission
 * at `now` conforms when TAT - now ≤ τ = (burst - 1) × T. So any n admissions in order satisfy
 * (n - burst) × T ≤ (time of the last) - (time of the first): never more than `burst` at once, and
 * `perSecond` on average. One number of state per key (the TAT), kept in the key's aggregate.
 */
export function gcra(tatMs: number, nowMs: number, perSecond: number, burst: number): GcraOutcome {
  const interval = 1000 / perSecond;
  const tolerance = (Math.max(1, burst) - 1) * interval;
  const tat = Math.max(tatMs, nowMs);
  if (tat - nowMs > tolerance) return { ok: false, retryAtMs: Math.ceil(tat - tolerance) };
  // Rounded up to the ms the log records: the recorded TAT never runs ahead of the rate.
  return { ok: true, tatMs: Math.ceil(tat + interval) };
}
