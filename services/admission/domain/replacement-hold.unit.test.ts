import { describe, expect, it } from "vitest";
import { keptForReplaced, REPLACEMENT_HOLD_MS, ReplacementHolds } from "./replacement-hold.ts";

const held = new Map([
  ["rt-dead/t-blue", 2],
  ["rt-dead/t-red", 1],
]);
const heldOn = (rt: string, t: string) => held.get(`${rt}/${t}`) ?? 0;
const rep = { tenantId: "t-blue", runtimeInstanceId: "rt-new", replaces: "rt-dead", fulfilledMs: 1_000 };

describe("a replacement's places kept for the runs of what it replaces", () => {
  it("keeps as many places as the replaced runtime still holds runs of the request's tenant, once per tenant", () => {
    expect(keptForReplaced([rep, { ...rep }], heldOn, 1_500)).toEqual(new Map([["rt-new", 2]]));
    expect(keptForReplaced([rep, { ...rep, tenantId: "t-red" }], heldOn, 1_500)).toEqual(new Map([["rt-new", 3]]));
  });

  it("keeps nothing once those runs left the replaced runtime (requeued, ended) or the bound passed", () => {
    expect(keptForReplaced([rep], () => 0, 1_500).size).toBe(0);
    expect(keptForReplaced([rep], heldOn, 1_000 + REPLACEMENT_HOLD_MS).size).toBe(0);
    expect(keptForReplaced([rep], heldOn, 999).size).toBe(0); // a clock behind the fulfilment: no hold
  });

  it("notes only fulfilled recovery replacements and drops them past the bound", () => {
    const h = new ReplacementHolds();
    h.note({ tenantId: "t-blue", requestId: "so-1", runtimeInstanceId: "rt-other", endedMs: 1_000 }); // admission's own
    h.note({ tenantId: "t-blue", requestId: "so-2", replaces: "rt-dead", endedMs: 1_000 }); // not fulfilled
    h.note({ ...rep, requestId: "so-3", endedMs: rep.fulfilledMs });
    expect(h.kept(1_200, heldOn)).toEqual(new Map([["rt-new", 2]]));
    expect(h.kept(1_000 + REPLACEMENT_HOLD_MS, heldOn).size).toBe(0);
    expect(h.kept(1_200, heldOn).size).toBe(0);
  });
});
