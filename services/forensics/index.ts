/** The forensics service: the MongoDB read models (runs, executions, incidents, forensics, ledger) projected from the DROVER stream. */
export { startForensics, type ForensicsService, type ForensicsOptions } from "./shell/service.ts";
export { forensicsProjection, toFact, PROJECTION_NAME } from "./shell/projection.ts";
export { mongoCheckpointStore, isBuilt, markerId } from "./shell/checkpoint-store.ts";
export {
  readModelDb,
  ensureIndexes,
  dropReadModels,
  insertNewOrPut,
  putManyIfNewer,
  byId,
  type ReadModelDb,
} from "./shell/collections.ts";
export { serveRebuild, type RebuildReply } from "./shell/control.ts";
export { ledgerRows, forensicsRow, tenantsConcerned } from "./domain/ledger.ts";
export { describe, isRecoveryEvent } from "./domain/describe.ts";
export { appendToRunList } from "./domain/run-list.ts";
export { placeLedgerRow } from "./domain/ledger-lanes.ts";
export { runAsSingleWriter, type SingleWriter, type WriterTerm } from "./shell/single-writer.ts";
