import { describe, expect, it } from "vitest";
import type { LoggedEvent } from "./assertions.ts";
import { decisionsOnce } from "./decision-assertions.ts";

/** Just the fields decisionsOnce reads: a test of pure log logic (proves no transport). */
const ev = (seq: number, type: string, correlationId: string, data: object): LoggedEvent =>
  ({ seq, subject: `drover.x.${seq}`, event: { type, correlationId, data } }) as unknown as LoggedEvent;

describe("decisionsOnce over a recorded log (pure: proves no transport)", () => {
  const placed = [
    ev(1, "run.admitted", "run-a", { localRunId: "lr-1" }),
    ev(2, "run.dispatched", "run-a", { localRunId: "lr-1" }),
    ev(3, "runtime.fenced", "rt-1", { hostIncarnation: "pid:1:100" }),
    ev(4, "run.admitted", "run-a", { localRunId: "lr-2" }),
    ev(5, "run.dispatched", "run-a", { localRunId: "lr-2" }),
  ];

  it("passes when each placement is admitted and dispatched once and each incarnation fenced once", () => {
    expect(decisionsOnce(placed).map((a) => [a.ok, a.detail])).toEqual([
      [true, "2 placements admitted, each decided once"],
      [true, "2 placements dispatched, each decided once"],
      [true, "1 incarnations fenced, each decided once"],
    ]);
  });

  it("names a placement admitted twice, a dispatch repeated and an incarnation fenced twice", () => {
    const twice = [
      ...placed,
      ev(6, "run.admitted", "run-a", { localRunId: "lr-2" }),
      ev(7, "run.dispatched", "run-a", { localRunId: "lr-1" }),
      ev(8, "runtime.fenced", "rt-1", { hostIncarnation: "pid:1:100" }),
    ];
    const r = decisionsOnce(twice);
    expect(r.map((a) => a.ok)).toEqual([false, false, false]);
    expect(r[0]!.detail).toBe("1 of 2 placements admitted decided more than once: run-a/lr-2 ×2");
    expect(r[1]!.detail).toContain("run-a/lr-1 ×2");
    expect(r[2]!.detail).toContain("pid:1:100 ×2");
  });

  it("fails on a log with no decisions at all (a check that cannot pass vacuously)", () => {
    expect(decisionsOnce([]).every((a) => !a.ok && a.violations === 1)).toBe(true);
  });
});
