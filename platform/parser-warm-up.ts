import { setImmediate as nextTurn } from "node:timers/promises";
import { EVENT_TYPES, precompileEventSchemas } from "../contracts/index.ts";

/** The catalogue's event types of the named aggregates (the part of a type before its first dot). */
export function eventTypesOf(aggregates: readonly string[]): readonly string[] {
  return EVENT_TYPES.filter((t) => aggregates.includes(t.slice(0, t.indexOf("."))));
}

/**
 * Compiles the parsers of `types` now, one schema per event-loop turn (a message or a timer arriving
 * meanwhile waits for one schema, not for all of them), instead of at each type's first use. zod
 * compiles an event schema the first time it is decoded or encoded (contracts/codec.ts), ~5–50 ms each
 * in a fresh process; the first time a service meets most recovery events is during an incident, on
 * its critical path. Stops early once `stopped()` answers true. Returns how many schemas it compiled.
 */
export async function warmUpEventParsers(
  types: readonly string[],
  stopped: () => boolean = () => false,
): Promise<number> {
  let n = 0;
  for (const type of types) {
    if (stopped()) break;
    n += precompileEventSchemas([type]);
    await nextTurn();
  }
  return n;
}

/**
 * A caught-up service's warm-up of the parsers of the aggregates it decodes and encodes (its log says
 * `event parsers compiled` with the count, or why not); returns the stop to call at shutdown.
 */
export function warmUpServiceParsers(
  aggregates: readonly string[],
  log: {
    info(o: Record<string, unknown>, msg: string): void;
    warn(o: Record<string, unknown>, msg: string): void;
  },
): () => void {
  let stopping = false;
  void warmUpEventParsers(eventTypesOf(aggregates), () => stopping).then(
    (schemas) => log.info({ schemas, aggregates }, "event parsers compiled"),
    (e: unknown) => log.warn({ err: String(e) }, "event parsers not compiled ahead"),
  );
  return () => void (stopping = true);
}
