import { isDroverError, TenantId } from "../../../contracts/index.ts";
import { envelope } from "../../../platform/envelope.ts";
import { runRef } from "../../../streams/index.ts";
import { decideRun, type AdmissionCommand } from "../domain/run-decider.ts";
import type { AdmissionDeps } from "./deps.ts";
import type { IndexedRun } from "./run-index.ts";

/**
 * read (index) → decide → append conditionally on the run's last sequence → apply to the index.
 * Returns the sequence of the last appended event, or undefined when the decision no longer applies
 * (another replica or service moved the run: a version conflict or NotApplicable). Never retries
 * blindly: the follower brings the newer state and the next tick decides again.
 */
export async function appendRunDecision(
  deps: AdmissionDeps,
  r: IndexedRun,
  cmd: AdmissionCommand,
  causationId: string,
): Promise<number | undefined> {
  let decided;
  try {
    decided = decideRun(cmd, r.state);
  } catch (e) {
    if (isDroverError(e, "decision-not-applicable")) return undefined;
    throw e;
  }
  if (decided.length === 0) return r.state.lastSeq;
  const events = decided.map((d) =>
    envelope(deps.env, d.type, d.data, {
      tenantId: TenantId.parse(r.tenantId),
      correlationId: r.sharedRunId,
      causationId,
    }),
  );
  try {
    const appended = await deps.store.appendAll(runRef(r.tenantId, r.sharedRunId), events, {
      expectedSeq: r.state.lastSeq,
    });
    appended.forEach((a, i) => deps.index.applyOwn(r.tenantId, r.sharedRunId, events[i]!, a.seq));
    return appended.at(-1)?.seq;
  } catch (e) {
    if (isDroverError(e, "version-conflict")) return undefined;
    throw e;
  }
}
