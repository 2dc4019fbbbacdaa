import { afterEach, beforeEach, describe, expect, inject, it } from "vitest";
import { RuntimeEnded, RuntimeWriter } from "../../services/provisioner/index.ts";
import { createEventStore } from "../../streams/event-store.ts";
import { runtimeRef } from "../../streams/subjects.ts";
import type { EventStore } from "../../streams/types.ts";
import { event, freshStreams, type StreamsFixture } from "../support/streams.ts";

/**
 * The provisioner's RuntimeWriter against a real nats-server: a start's events go as one conditional
 * append each, never as an atomic batch (nats-server syncs a batch to disk at its commit and commits
 * batches one at a time), and still none of them lands once another writer ended the runtime.
 */
describe("RuntimeWriter: a start's events as conditional appends on a real nats-server", () => {
  let fx: StreamsFixture;
  let base: EventStore;
  const id = "rt-writer-1";
  const ref = runtimeRef(id);
  beforeEach(async () => {
    fx = await freshStreams(inject("natsUrl"));
    base = createEventStore(fx.nc, fx.layout);
  });
  afterEach(async () => {
    await fx.close();
  });

  const publishing = () => [
    event("runtime.readiness-layer-passed"),
    event("runtime.endpoint-published"),
    event("runtime.capacity-published"),
  ];

  it("stores several events in order, one conditional append each and no atomic batch", async () => {
    const batches: number[] = [];
    const store: EventStore = {
      ...base,
      appendAtomic: (entries) => {
        batches.push(entries.length);
        return base.appendAtomic(entries);
      },
    };
    const registered = event("runtime.registered");
    const first = await base.append(ref, registered, { expectedSeq: 0 });
    const w = RuntimeWriter.after(store, id, [registered], [first]);
    const events = publishing();
    await w.append(events);
    expect(batches).toEqual([]);
    const h = await base.read(ref);
    expect(h.events.map((e) => e.event.eventId)).toEqual([registered, ...events].map((e) => e.eventId));
    expect(w.state?.capacityPublished).toBe(true);
  });

  it("a runtime whose host exits between two events of one append gets none after the exit", async () => {
    const registered = event("runtime.registered");
    const first = await base.append(ref, registered, { expectedSeq: 0 });
    let exited = false;
    const store: EventStore = {
      ...base,
      // Our host-exit recorder (another writer) appends `host-exited` right after the first event lands.
      append: async (r, e, o) => {
        const a = await base.append(r, e, o);
        if (!exited) {
          exited = true;
          await base.append(ref, event("runtime.host-exited"), { expectedSeq: a.seq });
        }
        return a;
      },
    };
    const w = RuntimeWriter.after(store, id, [registered], [first]);
    const err = await w.append(publishing()).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RuntimeEnded);
    expect((err as RuntimeEnded).endedBy).toBe("host-exited");
    expect((await base.read(ref)).events.map((e) => e.event.type)).toEqual([
      "runtime.registered",
      "runtime.readiness-layer-passed",
      "runtime.host-exited",
    ]);
  });
});
