import { isSubjectSafeId } from "../../../contracts/index.ts";
import { appendRunDecision } from "./append-run.ts";
import type { AdmissionDeps } from "./deps.ts";
import type { IndexedRun } from "./run-index.ts";

/** An invalid submission: rejected with `contract-violation`, or given up on when no valid `rejected` can name it. */
export async function rejectInvalid(deps: AdmissionDeps, r: IndexedRun): Promise<void> {
  if (!isSubjectSafeId(r.tenantId) || !isSubjectSafeId(r.sharedRunId)) {
    // No valid `rejected` can name this run: report it once and stop trying (the raw message stays in the log).
    deps.log.error(
      { subject: `${r.tenantId}/${r.sharedRunId}`, seq: r.invalid!.seq, err: r.invalid!.error },
      "invalid submission with an unusable subject; cannot be rejected",
    );
    deps.index.abandon(r);
    return;
  }
  // The invalid submission is the aggregate's last event; `rejected` must follow exactly it.
  const state = { ...r.state, status: "submitted" as const, lastSeq: r.invalid!.seq };
  await appendRunDecision(
    deps,
    { ...r, state },
    { kind: "Reject", reason: { code: "contract-violation", detail: r.invalid!.error.slice(0, 2000) } },
    `validation:${r.invalid!.seq}`,
  );
}
