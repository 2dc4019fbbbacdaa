import { EVENT_DEFINITIONS, type DataOf, type EventType } from "../../contracts/index.ts";

/**
 * Test data written with plain-string ids, parsed by the catalogue's schema of `type` into the
 * branded data the compiler expects, so a test needs no cast and a typo fails here, not on append.
 */
export function eventData<T extends EventType>(type: T, raw: unknown): DataOf<T> {
  const def = EVENT_DEFINITIONS.get(type);
  if (!def) throw new Error(`no event type ${type}`);
  // The map is keyed by type, so its entry's data schema is the one of `T`: the one cast here.
  return def.schema.shape.data.parse(raw) as DataOf<T>;
}
