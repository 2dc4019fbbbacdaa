import { describe, expect, it } from "vitest";
import { DEFAULT_LAYOUT, runtimeRef, type EventStore } from "../../../streams/index.ts";
import { exampleEvent } from "../../../test/support/example-events.ts";
import { MemoryEventStore } from "../../../test/support/memory-event-store.ts";
import { RosterView } from "./roster-view.ts";

/**
 * The roster's catch-ups as a first plan waits for them (provisioner.ts `neededSeq`), on an
 * in-memory store whose replays can be held mid-fold: proves the sharing of replays, no transport
 * and no JetStream behaviour (test/int/snapshots-roster.int.test.ts folds a real stream).
 */
describe("RosterView.current(upTo) (in-memory store, held replays; proves no transport)", () => {
  function fixture() {
    const store = new MemoryEventStore();
    const held = { replays: 0, hold: undefined as Promise<void> | undefined, started: () => undefined as void };
    const replaying: EventStore = {
      replay: (from, onEvent, o) => {
        held.replays++;
        held.started();
        const hold = held.hold;
        // The end is fixed first (the store tells it), then the fold waits: a replay in flight.
        return store.replay(from, async (e) => (await hold, onEvent(e)), o);
      },
    } as Partial<EventStore> as EventStore;
    const register = (id: string) =>
      store.append(runtimeRef(id), exampleEvent("runtime.registered"), { expectedSeq: 0 });
    /** Holds the next replay's fold until released; resolves once that replay has started. */
    const holdNext = async (start: () => Promise<unknown>) => {
      let release!: () => void;
      held.hold = new Promise((r) => (release = r));
      const started = new Promise<void>((r) => (held.started = r));
      const p = start();
      await started;
      return { p, release };
    };
    return { store, held, register, holdNext, view: new RosterView(replaying, DEFAULT_LAYOUT) };
  }

  it("a caller needing no more than the replay in flight reaches is served by it (no second catch-up queued behind it)", async () => {
    const { held, register, holdNext, view } = fixture();
    const first = await register("rt-a-1");
    const { p: inFlight, release } = await holdNext(() => view.current());
    await register("rt-a-2"); // stored after the replay's end was fixed
    const served = view.current(first.seq);
    await Promise.resolve();
    release();
    const [a, b] = await Promise.all([inFlight, served]);
    expect(held.replays).toBe(1);
    expect(b).toBe(a);
    expect([...b.runtimes.keys()]).toEqual(["rt-a-1"]);
  });

  it("a roster already folded up to the sequence asked for is returned without a replay; a later one, or none, reads again", async () => {
    const { held, register, view } = fixture();
    const first = await register("rt-b-1");
    await view.current();
    expect(held.replays).toBe(1);
    expect([...(await view.current(first.seq)).runtimes.keys()]).toEqual(["rt-b-1"]);
    expect(held.replays).toBe(1);
    const second = await register("rt-b-2");
    expect([...(await view.current(second.seq)).runtimes.keys()]).toEqual(["rt-b-1", "rt-b-2"]);
    expect(held.replays).toBe(2);
    await view.current();
    expect(held.replays).toBe(3);
  });

  it("a caller needing more than the replay in flight reaches waits for the fresh one after it, which holds that event", async () => {
    const { held, register, holdNext, view } = fixture();
    await register("rt-c-1");
    const { p: inFlight, release } = await holdNext(() => view.current());
    const second = await register("rt-c-2");
    const later = view.current(second.seq);
    await Promise.resolve();
    release();
    await inFlight;
    expect([...(await later).runtimes.keys()]).toEqual(["rt-c-1", "rt-c-2"]);
    expect(held.replays).toBe(2);
  });
});
