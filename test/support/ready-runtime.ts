import type { DroverEvent, EventType } from "../../contracts/index.ts";
import { runtimeRef, type EventStore } from "../../streams/index.ts";
import { EXAMPLE_BUILDERS } from "./example-events.ts";

/** The provisioner's events that make a runtime placeable in the capacity view, in order. */
export const READY_RUNTIME_EVENTS: readonly EventType[] = [
  "runtime.registered",
  "runtime.host-started",
  "runtime.readiness-layer-passed",
  "runtime.endpoint-published",
  "runtime.capacity-published",
];

/** Appends {@link READY_RUNTIME_EVENTS} (example payloads, event ids made unique per runtime) to `rt`'s stream. */
export async function publishReadyRuntime(store: EventStore, rt: string): Promise<void> {
  let seq = await store.lastSeq(runtimeRef(rt));
  for (const t of READY_RUNTIME_EVENTS) {
    const e = EXAMPLE_BUILDERS[t]() as DroverEvent;
    const event = { ...e, eventId: `${e.eventId}-${rt}`.slice(0, 63) } as DroverEvent;
    seq = (await store.append(runtimeRef(rt), event, { expectedSeq: seq })).seq;
  }
}
