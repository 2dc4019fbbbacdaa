import { setImmediate as nextTurn } from "node:timers/promises";
import { EVENT_TYPES, precompileEventSchemas } from "../../../contracts/index.ts";

/**
 * The events recovery decodes or encodes in full on an incident's critical path: a fenced runtime's
 * runs and execution journals read fresh by the reconcile, its forensics records and pause batches
 * appended, scale-out histories read for its replacement, runtime events folded.
 */
const INCIDENT_EVENTS = EVENT_TYPES.filter((t) => /^(?:exec|run|forensics|scaleout|runtime)\./.test(t));

/**
 * Compiles the parsers of INCIDENT_EVENTS once recovery is caught up, one schema per event-loop turn
 * (a fold or a kill arriving meanwhile waits for one schema, not for all of them). zod compiles each
 * schema on first use, so without this the first incident paid for it between `fenced` and the pause
 * batch: ~36 ms of recovery's CPU in W3's first ~750 ms after the fence at load 13, on the path every
 * resume waits for (the `exec.step-completed` journals its reconcile reads are never folded before).
 * Stops early once `stopped()` answers true. Returns how many schemas it compiled.
 */
export async function warmUpIncidentParsers(stopped: () => boolean = () => false): Promise<number> {
  let n = 0;
  for (const type of INCIDENT_EVENTS) {
    if (stopped()) break;
    n += precompileEventSchemas([type]);
    await nextTurn();
  }
  return n;
}
