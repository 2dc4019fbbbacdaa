import type { Condition, LabelSelector } from "./api-types.ts";

/**
 * Builds a metav1.Condition that keeps `lastTransitionTime` from the previous condition of the same
 * type while its status is unchanged, as the API conventions require.
 */
export function condition(
  prev: readonly Condition[] | undefined,
  type: string,
  ok: boolean | "Unknown",
  reason: string,
  message: string,
  observedGeneration: number,
  now: string,
): Condition {
  const status = ok === "Unknown" ? "Unknown" : ok ? "True" : "False";
  const before = prev?.find((c) => c.type === type);
  const since =
    before && before.status === status && before.lastTransitionTime
      ? new Date(before.lastTransitionTime).toISOString().replace(/\.\d{3}Z$/, "Z")
      : now;
  return { type, status, reason, message, observedGeneration, lastTransitionTime: since };
}

/** Whether `labels` satisfy a metav1.LabelSelector (matchLabels and matchExpressions, ANDed). */
export function selectorMatches(sel: LabelSelector | undefined, labels: Record<string, string> | undefined): boolean {
  const l = labels ?? {};
  for (const [k, v] of Object.entries(sel?.matchLabels ?? {})) if (l[k] !== v) return false;
  for (const e of sel?.matchExpressions ?? []) {
    const has = e.key in l;
    const inValues = has && (e.values ?? []).includes(l[e.key] as string);
    if (e.operator === "In" && !inValues) return false;
    if (e.operator === "NotIn" && inValues) return false;
    if (e.operator === "Exists" && !has) return false;
    if (e.operator === "DoesNotExist" && has) return false;
  }
  return true;
}

/** RFC 3339 without fractional seconds: the format metav1.Time serializes to. */
export function rfc3339(d: Date): string {
  return d.toISOString().replace(/\.\d{3}Z$/, "Z");
}
