import { describe, expect, it } from "vitest";
import { TenantId } from "../../../contracts/index.ts";
import { event } from "../../../test/support/streams.ts";
import { RunIndex } from "./run-index.ts";

// Proves no transport: the index is fed its own appends (applyOwn), as admission does before the
// follower delivers them.
const clock = { now: () => new Date(1_000) };
const acme = TenantId.parse("acme");

describe("RunIndex (in memory, no transport): pending set and active counts kept as runs change", () => {
  it("a run is pending from submission until it starts, active from admission until it ends", () => {
    const idx = new RunIndex("drover.events", () => undefined, clock);
    const apply = (type: Parameters<typeof event>[0], seq: number) =>
      idx.applyOwn("acme", "r-1", event(type, { tenantId: acme }), seq);
    const seen = () => [idx.pending().map((r) => r.sharedRunId), idx.activeCount("acme")];

    expect(seen()).toEqual([[], 0]);
    apply("run.submitted", 1);
    expect(seen()).toEqual([["r-1"], 0]);
    apply("run.admitted", 2);
    expect(seen()).toEqual([["r-1"], 1]);
    apply("run.dispatched", 3);
    expect(seen()).toEqual([["r-1"], 1]);
    apply("run.started", 4);
    expect(seen()).toEqual([[], 1]);
    expect(idx.activeCount("globex")).toBe(0);
    apply("run.completed", 5);
    expect(seen()).toEqual([[], 0]);
    // A redelivered event changes nothing (the fold is idempotent by sequence).
    apply("run.started", 4);
    expect(seen()).toEqual([[], 0]);
  });

  it("an abandoned invalid submission leaves the pending set", () => {
    const idx = new RunIndex("drover.events", () => undefined, clock);
    idx.apply({
      subject: "drover.events.run.acme.r-2.submitted",
      seq: 7,
      data: new TextEncoder().encode("{}"),
    });
    const [r] = idx.pending();
    expect(r?.invalid?.seq).toBe(7);
    idx.abandon(r!);
    expect(idx.pending()).toEqual([]);
  });

  it("admitted and dispatched placements wait in `placed`, apart from new work and from what every pass reads; a cancel brings one back to `side`", () => {
    const idx = new RunIndex("drover.events", () => undefined, clock);
    const apply = (type: Parameters<typeof event>[0], seq: number) =>
      idx.applyOwn("acme", "r-1", event(type, { tenantId: acme }), seq);
    const where = () => {
      const r = idx.get("acme", "r-1")!;
      return [idx.work.side.has(r), idx.work.placed.has(r), idx.work.queues.size];
    };
    apply("run.submitted", 1);
    expect(where()).toEqual([false, false, 1]);
    apply("run.admitted", 2);
    expect(where()).toEqual([false, true, 0]);
    apply("run.dispatched", 3);
    expect(where()).toEqual([false, true, 0]);
    apply("run.cancel-requested", 4);
    expect(where()).toEqual([true, false, 0]);
  });

  it("an event the index already folded (admission's own append, delivered again by the follower) is not decoded again", () => {
    const idx = new RunIndex("drover.events", () => undefined, clock);
    idx.applyOwn("acme", "r-3", event("run.submitted", { tenantId: acme }), 5);
    // Bytes that would not decode at all: at a sequence already folded they are never looked at.
    idx.apply({ subject: "drover.events.run.acme.r-3.admitted", seq: 5, data: new TextEncoder().encode("{}") });
    expect(idx.get("acme", "r-3")?.invalid).toBeUndefined();
    expect(idx.get("acme", "r-3")?.state.lastSeq).toBe(5);
  });
});
