/** The api service: tenant-facing HTTP (submit, query, follow events over SSE) and the dashboard. */
export { buildApp, BODY_LIMIT_BYTES } from "./http/app.ts";
export type { ApiDeps } from "./shell/deps.ts";
export { authenticate, feedScope, readTenant, type TokenTable, type FeedScope } from "./domain/access.ts";
export { tokenTable, hashToken, TOKEN_HASH } from "./shell/token-table.ts";
export { SubmitRunBody, decideSubmission, submissionDecider, type SubmitRun } from "./domain/submission.ts";
export { runView, type RunView } from "./domain/run-view.ts";
export { runtimeRow, capacityEntry, type RuntimeRow, type CapacityEntry } from "./domain/runtime-view.ts";
export { jetStreamFeed, type EventFeed, type FeedFrame } from "./shell/event-feed.ts";
export { replayCapacityReader, type CapacityReader } from "./shell/capacity-reader.ts";
export {
  startOpenRunsProjection,
  type OpenRunsCounter,
  type OpenRunsProjection,
} from "./shell/open-runs-projection.ts";
export { randomIdGenerator, submissionIds, type IdGenerator } from "./shell/ids.ts";
export { mongoReadModels, type ReadModels } from "./shell/read-models.ts";
