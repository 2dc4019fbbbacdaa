/** admission service: placement of runs on tenant-visible capacity. */
export { startAdmission, type AdmissionService } from "./shell/service.ts";
export { RunIndex, type IndexedRun } from "./shell/run-index.ts";
export type { AdmissionDeps } from "./shell/deps.ts";
export { registerRunsGauge } from "./shell/metrics.ts";
export { startChildRuns, type ChildRunsDeps } from "./shell/child-runs.ts";
export { childIds } from "./domain/child-submission.ts";
export { verifyRuns } from "./shell/verify-runs.ts";
