import { runDocId, type RunDoc } from "../../contracts/read-models.ts";

/**
 * The run document of the n-th bench run of a tenant (`run-bench-<n>`, submitted at sequence n + 1,
 * `spacingMs` apart from 2026-01-01): what the forensics projector would have written for it.
 */
export function benchRunDoc(
  n: number,
  tenantId: string,
  o: { readonly status: RunDoc["status"]; readonly stepCount: number; readonly spacingMs: number },
): RunDoc {
  const seq = n + 1;
  const at = new Date(Date.UTC(2026, 0, 1) + n * o.spacingMs).toISOString();
  const sharedRunId = `run-bench-${String(n).padStart(6, "0")}`;
  return {
    _id: runDocId(tenantId, sharedRunId),
    tenantId,
    sharedRunId,
    status: o.status,
    dagName: "bench",
    stepCount: o.stepCount,
    labels: [{ key: "batch", value: String(n % 10) }],
    submitted: { seq, at, storedAt: at },
    placements: [],
    executionIds: [],
    forensicsIds: [],
    incidentIds: [],
    scaleOutRequestIds: [],
    firstSeq: seq,
    lastSeq: seq,
  };
}
