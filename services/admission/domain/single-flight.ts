/** What admission knows of earlier scale-out requests with one dedupe key. */
export interface KnownRequest { readonly requestId: string; readonly status: string; readonly endedMs?: number }

export type ScaleOutPlan =
  | { readonly kind: "wait-for"; readonly requestId: string }
  | { readonly kind: "hold" }
  | { readonly kind: "request"; readonly generation: number };

/** After a rejection or expiry, wait this long before asking again (no request storm at a limit). */
export const SCALE_OUT_RETRY_MS = 10_000;
const fulfilledGraceMs = (heartbeatIntervalMs: number) => Math.max(1000, 3 * heartbeatIntervalMs);

/**
 * Single-flight scale-out (pure): while a request with the key is open, every run waits for it; after
 * one ended, hold for a grace (a fulfilled runtime needs its first heartbeats to become routable; a
 * rejected one backs off); otherwise make the next generation. The id is a hash of the key and the
 * generation, so concurrent admissions that know the same history propose the same request.
 */
export function planScaleOut(known: readonly KnownRequest[], now: number, heartbeatIntervalMs: number): ScaleOutPlan {
  const open = known.find((s) => s.status === "requested" || s.status === "observed");
  if (open) return { kind: "wait-for", requestId: open.requestId };
  const waitUntil = Math.max(0, ...known.map((s) => (s.endedMs ?? 0) + (s.status === "fulfilled" ? fulfilledGraceMs(heartbeatIntervalMs) : SCALE_OUT_RETRY_MS)));
  return now < waitUntil ? { kind: "hold" } : { kind: "request", generation: known.length };
}
