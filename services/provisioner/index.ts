/** The provisioner service: scale-out requests become runtimes that passed every readiness layer. */
export { createProvisioner, type Provisioner } from "./shell/provisioner.ts";
export type { ProvisionerDeps } from "./shell/context.ts";
export { consumeScaleOutRequests, scaleOutConsumer } from "./shell/consumer.ts";
export { randomSuffix } from "./shell/suffix.ts";
export { deployCurrentBuilds, recordDeploy } from "./shell/deploys.ts";
export { planRequest, REQUIRED_LAYERS, type Plan, type Next } from "./domain/plan.ts";
export { evolveRequest, initialRequestState, isTerminal, type RequestState } from "./domain/request-state.ts";
export {
  evolveRoster,
  emptyRoster,
  liveByPrefix,
  hasPrefix,
  type Roster,
  type RuntimeSummary,
} from "./domain/runtime-roster.ts";
export { runtimeInstanceIdOf, RUNTIME_SUFFIX_LENGTH } from "./domain/runtime-id.ts";
export { claimableMembers, refillCount, POOL_LAYERS, POOL_MEMBER_PREFIX } from "./domain/warm-pool.ts";
export { RosterView, type RosterOptions } from "./shell/roster-view.ts";
export { RuntimeEnded, RuntimeWriter } from "./shell/runtime-writer.ts";
export { watchDrainedRuntimes, drainStopMessage, type DrainSource } from "./shell/retire-drained.ts";
export { adoptedHosts } from "./shell/adopted-hosts.ts";
export { createWarmPool, type WarmPool, type WarmSlot } from "./shell/warm-pool.ts";
export { startResponders, type Responders, type RespondersConfig } from "./shell/responders.ts";
