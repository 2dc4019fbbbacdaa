/** admission service: placement of runs on tenant-visible capacity. */
export { startAdmission, type AdmissionService } from "./shell/service.ts";
export { RunIndex, type IndexedRun } from "./shell/run-index.ts";
export type { AdmissionDeps } from "./shell/deps.ts";
export { registerRunsGauge } from "./shell/metrics.ts";
