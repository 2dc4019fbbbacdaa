/** recovery service: health, fencing, recovery of a failed runtime's work, forensics timelines. */
export { recoveryEventFilters, startRecovery, type RecoveryService } from "./shell/service.ts";
export { RecoveryState } from "./shell/state.ts";
export { detect } from "./shell/health.ts";
export { reconcile } from "./shell/reconcile.ts";
export type { RecoveryDeps } from "./shell/deps.ts";
export { registerRecoveryMetrics } from "./shell/metrics.ts";
