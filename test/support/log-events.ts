import type { DroverEvent } from "../../contracts/index.ts";
import type { EventStore, StoredEvent } from "../../streams/index.ts";

/** Every event of the store's stream from sequence 1, in stream order (a test reading the whole log). */
export async function wholeLog(store: EventStore): Promise<StoredEvent[]> {
  const all: StoredEvent[] = [];
  await store.replay({ seq: 1 }, (e) => {
    all.push(e);
  });
  return all;
}

/** The events of type `t` among `es`, in order, typed as that event. */
export const ofType = <T extends DroverEvent["type"]>(es: readonly StoredEvent[], t: T) =>
  es.flatMap((e) => (e.event.type === t ? [e.event as Extract<DroverEvent, { type: T }>] : []));
