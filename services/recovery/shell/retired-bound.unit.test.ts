import { describe, expect, it } from "vitest";
import type { EventType } from "../../../contracts/index.ts";
import { event } from "../../../test/support/streams.ts";
import { forensicsIds, ids } from "../../../test/support/example-events.ts";
import { RecoveryState } from "./state.ts";

// Proves no transport: events are applied in memory, as the follower would deliver them.
const T = ids.tenant;
const RT = ids.runtime;
const on = (s: RecoveryState, id: string, type: EventType, seq: number) =>
  s.applyOwn(`drover.runtime.${id}.${type.slice("runtime.".length)}`, event(type as never), seq);
const record = (s: RecoveryState, type: EventType, seq: number) =>
  s.applyOwn(
    `drover.forensics.${T}.${forensicsIds.inFlight}.${type.slice("forensics.".length)}`,
    event(type as never),
    seq,
  );
const retired = (s: RecoveryState, id: string, seq: number) => {
  on(s, id, "runtime.registered", seq);
  on(s, id, "runtime.retired", seq + 1);
};

describe("recovery's bounds on finished runtimes and completed forensics records (in memory, no transport)", () => {
  it("a fenced runtime leaves only once it is planned and its plan's records completed; its completed record stays until it is planned", () => {
    const s = new RecoveryState("drover", () => undefined);
    s.retired.maxRuntimes = 0;
    s.retired.maxForensics = 0;
    for (const [i, type] of (
      ["runtime.registered", "runtime.host-started", "runtime.capacity-published", "runtime.suspected"] as const
    ).entries())
      on(s, RT, type, i + 1);
    on(s, RT, "runtime.fenced", 5);
    record(s, "forensics.execution-recovery-candidate-detected", 6);
    record(s, "forensics.execution-recovery-completed", 7);
    // Fenced, not planned: reconcile still lists this record in the plan, so both stay.
    expect(s.runtimes.has(RT)).toBe(true);
    expect(s.forensics.has(forensicsIds.inFlight)).toBe(true);
    on(s, RT, "runtime.recovery-planned", 8);
    // Planned: the record (completed) leaves, and the runtime (its plan's other record, local-queued, never folded
    // here, counts as dropped hence completed) leaves with it.
    expect(s.forensics.has(forensicsIds.inFlight)).toBe(false);
    expect(s.runtimes.has(RT)).toBe(false);
    expect([s.retired.droppedRuntimes, s.retired.droppedForensics]).toEqual([1, 1]);
  });

  it("keeps a runtime whose fence is pending or which the fence-storm cap counts live, and drops retired ones oldest first", () => {
    const s = new RecoveryState("drover", () => undefined);
    s.retired.maxRuntimes = 1;
    on(s, "rt-suspected", "runtime.registered", 1);
    on(s, "rt-suspected", "runtime.host-started", 2);
    on(s, "rt-suspected", "runtime.suspected", 3);
    on(s, "rt-suspected", "runtime.retired", 4);
    // Claimed (health judges it no more) but published with a host: the cap's share still counts it.
    on(s, "rt-claimed", "runtime.registered", 5);
    on(s, "rt-claimed", "runtime.host-started", 6);
    on(s, "rt-claimed", "runtime.capacity-published", 7);
    on(s, "rt-claimed", "runtime.pool-member-claimed", 8);
    retired(s, "rt-old", 10);
    retired(s, "rt-new", 20);
    expect([...s.runtimes.keys()]).toEqual(["rt-suspected", "rt-claimed", "rt-new"]);
    expect(s.retired.droppedRuntimes).toBe(1);
  });

  it("after a drop, an unknown runtime's later event marks it unverified; a first event (registered) does not", () => {
    const s = new RecoveryState("drover", () => undefined);
    s.retired.maxRuntimes = 0;
    retired(s, "rt-gone", 1);
    expect(s.runtimes.has("rt-gone")).toBe(false);
    on(s, "rt-gone", "runtime.host-exited", 5);
    on(s, "rt-fresh", "runtime.registered", 6);
    expect([...s.retired.unverified]).toEqual(["rt-gone"]);
    // Read back (here: its history as the log holds it), it is finished again and leaves.
    s.replaceRuntime(
      "rt-gone" as never,
      (["runtime.registered", "runtime.retired", "runtime.host-exited"] as const).map((type, i) => ({
        seq: [1, 2, 5][i]!,
        time: new Date(),
        event: event(type as never),
      })),
    );
    expect(s.retired.unverified.size).toBe(0);
    expect(s.runtimes.has("rt-gone")).toBe(false);
    expect(s.retired.droppedRuntimes).toBe(2);
  });
});
