import { describe, expect, it } from "vitest";
import { initialRunState, type RunState } from "../../../aggregates/run.ts";
import { movedAlongPlacement } from "./placement-path.ts";

const at = (status: RunState["status"], more: Partial<RunState> = {}): RunState => ({
  ...initialRunState(),
  status,
  ...more,
});

describe("which run changes start no admission pass", () => {
  it("a queue decision and the moves forward through a placement start none", () => {
    for (const [from, to] of [
      ["submitted", "queued"],
      ["queued", "queued"],
      ["submitted", "admitted"],
      ["queued", "admitted"],
      ["admitted", "dispatched"],
      ["dispatched", "started"],
      ["admitted", "started"],
    ] as const)
      expect(movedAlongPlacement(at(from), at(to)), `${from} → ${to}`).toBe(true);
  });

  it("new work, a freed place or quota, a cancel, a recovery or a resume starts one", () => {
    for (const [from, to] of [
      ["none", "submitted"],
      ["dispatched", "queued"],
      ["admitted", "submitted"],
      ["started", "completed"],
      ["started", "failed"],
      ["queued", "cancelled"],
      ["started", "requeued-for-resume"],
      ["dispatched", "requeued-for-local-queued-recovery"],
      ["started", "started"],
    ] as const)
      expect(movedAlongPlacement(at(from), at(to)), `${from} → ${to}`).toBe(false);
    const cancel = { by: "api", reason: "x", seq: 9 };
    expect(movedAlongPlacement(at("admitted"), at("dispatched", { cancelRequested: cancel }))).toBe(false);
    expect(movedAlongPlacement(at("queued"), at("queued", { cancelRequested: cancel }))).toBe(false);
    expect(movedAlongPlacement(at("dispatched", { recoveryPending: true }), at("started"))).toBe(false);
  });
});
