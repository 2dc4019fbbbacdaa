/**
 * What replay validation reports (recovery.md "Replay validation"): `match`, or the FIRST divergence
 * in stream order with its stream sequence and a sentence a human can act on. Only the first is
 * reported because every later fact may be a consequence of it.
 */
export type Invariant =
  // execution journal
  | "exec-not-started"
  | "dag-digest"
  | "unknown-step"
  | "duplicate-step-completed"
  | "dependency-order"
  | "stale-epoch"
  | "scheduler-divergence"
  | "output-rederivation"
  | "condition-rederivation"
  | "map-rederivation"
  | "child-run-derivation"
  | "write-after-terminal"
  | "journal-fold"
  // run aggregate
  | "duplicate-run-completed"
  | "started-without-dispatch"
  | "misclassified-recovery"
  | "resume-new-execution"
  | "redispatch-reused-local-run"
  | "redispatch-reused-execution"
  // incident
  | "work-moved-before-fenced"
  | "write-after-fenced"
  | "missing-forensics-record";

export interface Divergence {
  readonly invariant: Invariant;
  /** Stream sequence of the first event that breaks the invariant. */
  readonly seq: number;
  readonly message: string;
  /** What was validated, e.g. `execution exec-…`, `run run-…`, `incident inc-…`. */
  readonly scope: string;
}

export type ValidationResult =
  | { readonly kind: "match"; readonly scope: string; readonly checked: number; readonly notes: readonly string[] }
  | { readonly kind: "divergence"; readonly scope: string; readonly checked: number; readonly divergence: Divergence };

/** A match of `scope` after checking `checked` events; `notes` say what a match does not cover (e.g. in flight). */
export const match = (scope: string, checked: number, notes: readonly string[] = []): ValidationResult => ({
  kind: "match",
  scope,
  checked,
  notes,
});

/** A divergence of `scope`: `d` is the first broken invariant with its stream sequence. */
export const diverged = (scope: string, checked: number, d: Omit<Divergence, "scope">): ValidationResult => ({
  kind: "divergence",
  scope,
  checked,
  divergence: { ...d, scope },
});

/**
 * Combines several validations (a run and its executions, an incident and its items) into one:
 * a match only if every part matches, else the divergence with the lowest stream sequence (ties:
 * the first part given). Never throws; an empty list is a match of nothing.
 */
export function firstDivergence(scope: string, results: readonly ValidationResult[]): ValidationResult {
  const checked = results.reduce((n, r) => n + r.checked, 0);
  let first: Divergence | undefined;
  for (const r of results)
    if (r.kind === "divergence" && (!first || r.divergence.seq < first.seq)) first = r.divergence;
  if (first) return { kind: "divergence", scope, checked, divergence: first };
  return match(scope, checked, [...new Set(results.flatMap((r) => (r.kind === "match" ? r.notes : [])))]);
}
