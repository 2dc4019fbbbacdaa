import { describe, expect, it } from "vitest";
import { TenantId, type DroverEvent } from "../../../contracts/index.ts";
import { runRef, type EventStore } from "../../../streams/index.ts";
import { MemoryEventStore } from "../../../test/support/memory-event-store.ts";
import { event } from "../../../test/support/streams.ts";
import { RunIndex } from "./run-index.ts";
import { verifyRuns } from "./verify-runs.ts";

// Proves no transport: an in-memory log, and a reader of it that answers as an R3 replica behind
// its leader (a history ending before the run's latest event) until told it caught up.
const clock = { now: () => new Date(1_000) };
const acme = TenantId.parse("acme");
const LIFE = ["run.submitted", "run.admitted", "run.dispatched", "run.started", "run.completed"] as const;

describe("verifyRuns over a replica behind (in memory, no transport)", () => {
  it("a new run first seen after drops is not reset to nothing by a read that lacks it: verified once the read has it", async () => {
    const store = new MemoryEventStore();
    const idx = new RunIndex("drover.events", () => undefined, clock);
    idx.maxTerminalRuns = 0;
    let expected = 0;
    for (const type of LIFE) {
      const e: DroverEvent = event(type, { tenantId: acme });
      expected = (await store.append(runRef("acme", "r-1"), e, { expectedSeq: expected })).seq;
      idx.applyOwn("acme", "r-1", e, expected);
    }
    const submitted = event("run.submitted", { tenantId: acme });
    const a = await store.append(runRef("acme", "r-9"), submitted, { expectedSeq: 0 });
    idx.applyOwn("acme", "r-9", submitted, a.seq);
    expect(idx.unverified().map((r) => r.sharedRunId)).toEqual(["r-9"]);

    const replica = { caughtUp: false };
    const behind: Pick<EventStore, "read"> = {
      read: async (ref) => (replica.caughtUp ? store.read(ref) : { events: [], lastSeq: 0 }),
    };
    await verifyRuns(idx, behind);
    expect(idx.get("acme", "r-9")?.state.status).toBe("submitted");
    expect(idx.unverified().map((r) => r.sharedRunId)).toEqual(["r-9"]); // looked at again next pass
    expect(idx.pending()).toEqual([]);

    replica.caughtUp = true;
    expect(await verifyRuns(idx, behind)).toBe(1);
    expect(idx.unverified()).toEqual([]);
    expect(idx.pending().map((r) => r.sharedRunId)).toEqual(["r-9"]);
  });
});
