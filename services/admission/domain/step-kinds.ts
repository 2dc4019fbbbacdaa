import { BUILTIN_STEP_KINDS } from "../../../contracts/index.ts";

/** What a runtime offers: its registration's step kinds, or the built-ins for a registration that names none. */
export const offeredKinds = (stepKinds: readonly string[] | undefined): readonly string[] =>
  stepKinds ?? BUILTIN_STEP_KINDS;

/** The kinds of `required` a runtime offering `offered` lacks (empty: it can run the DAG). */
export function missingKinds(offered: readonly string[], required: readonly string[]): string[] {
  const have = new Set(offered);
  return required.filter((k) => !have.has(k));
}

/**
 * The candidates that offer every kind the run's DAG needs (admission places a run only there),
 * and, when that leaves none of the visible ones, why: per runtime, the kinds it lacks.
 */
export function offeringEveryKind<
  C extends { readonly runtimeInstanceId: string; readonly stepKinds?: readonly string[] },
>(
  candidates: readonly C[],
  required: readonly string[],
): { readonly offering: C[]; readonly lacking: string | undefined } {
  const offering: C[] = [];
  const lacking: string[] = [];
  for (const c of candidates) {
    const missing = missingKinds(offeredKinds(c.stepKinds), required);
    if (missing.length === 0) offering.push(c);
    else lacking.push(`${c.runtimeInstanceId} lacks ${missing.join(",")}`);
  }
  return { offering, lacking: lacking.length > 0 && offering.length === 0 ? lacking.join("; ") : undefined };
}

/**
 * The `queued-globally` reason when runtimes could take the run but none offers every kind of its
 * DAG (`step-kind-unavailable`, naming what each lacks); undefined when kinds are not the reason.
 */
export function stepKindQueueReason(
  eligible: readonly { readonly runtimeInstanceId: string; readonly stepKinds?: readonly string[] }[],
  required: readonly string[],
): { readonly code: "step-kind-unavailable"; readonly detail: string } | undefined {
  if (eligible.length === 0) return undefined;
  const { lacking } = offeringEveryKind(eligible, required);
  return lacking === undefined
    ? undefined
    : {
        code: "step-kind-unavailable",
        detail: `no runtime offers every step kind of the DAG: ${lacking}`.slice(0, 2000),
      };
}
