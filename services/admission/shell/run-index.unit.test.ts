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
});
