/**
 * Replay validation as a library (recovery.md "Replay validation"): pure checks over recorded
 * stream events, shared by the `drover replay` CLI, the proof scenarios and the unit tier.
 * Every check reports `match` or the first divergence with its stream sequence.
 */
export { validateExecution, type ExecutionReplay } from "./replay/execution-invariants.ts";
export { validateRun } from "./replay/run-invariants.ts";
export { validateIncident } from "./replay/incident-invariants.ts";
export { firstDivergence, type Divergence, type Invariant, type ValidationResult } from "./replay/result.ts";
export {
  validateRunLog,
  validateExecutionLog,
  validateIncidentLog,
  aggregateIdOf,
  dagOf,
  executionsOfRun,
  incidentsOfRun,
  storedOutputNames,
  type RecordedEvent,
  type LogOptions,
} from "./replay/recorded-log.ts";
