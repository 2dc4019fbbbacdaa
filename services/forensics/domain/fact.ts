import type { DroverEvent } from "../../../contracts/index.ts";
import type { Position } from "../../../contracts/read-models.ts";

/**
 * One stored event as the projector's pure code sees it. The shell resolves what the event itself
 * does not carry: the stream (rows are keyed by it), the aggregate id (from the subject: not every
 * event repeats it in its data) and the server's receive time.
 */
export interface Fact<E extends DroverEvent = DroverEvent> {
  readonly stream: string;
  readonly seq: number;
  readonly storedAt: string;
  readonly aggregateId: string;
  readonly event: E;
}

/** The fact's place in the total order and its two clocks. */
export const positionOf = (f: Fact): Position => ({ seq: f.seq, at: f.event.occurredAt, storedAt: f.storedAt });

/**
 * `value` with every NUL character replaced (U+FFFD). FerretDB lists NUL in strings as unsupported
 * (its v1.24 SQLite backend happens to accept it; do not rely on that), and a refused write would
 * stop the projector on that event for good; free text (reasons, step errors, labels) comes from
 * writers we do not control. Pure.
 */
export function storable<T>(value: T): T {
  // Almost nothing holds a NUL: look first, copy only then (the copy of every row was ~8% of the projector's CPU in W2).
  return hasNul(value) ? withoutNul(value) : value;
}

/**
 * Whether a `JSON.stringify` result may hold a NUL: JSON writes one as the escape `\u0000`, so a
 * text without that escape holds none, and the value it encodes needs no walk by {@link storable}
 * (a false alarm, an escaped backslash before `u0000`, only costs that walk). Pure.
 */
export const mayHoldNul = (json: string): boolean => json.includes("\\u0000");

function hasNul(value: unknown): boolean {
  if (typeof value === "string") return value.includes("\u0000");
  if (value === null || typeof value !== "object") return false;
  if (Array.isArray(value)) return value.some(hasNul);
  for (const k in value) if (hasNul((value as Record<string, unknown>)[k])) return true;
  return false;
}

function withoutNul<T>(value: T): T {
  if (typeof value === "string") return (value.includes("\u0000") ? value.replaceAll("\u0000", "\uFFFD") : value) as T;
  if (Array.isArray(value)) return value.map(withoutNul) as T;
  if (value !== null && typeof value === "object") {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, withoutNul(v)])) as T;
  }
  return value;
}

/** `list` with `value` appended unless already present (ids recorded once, in first-seen order). */
export const addOnce = <T>(list: readonly T[], value: T): readonly T[] =>
  list.includes(value) ? list : [...list, value];
