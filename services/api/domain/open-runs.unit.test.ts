import { describe, expect, it } from "vitest";
import { emptyOpenRuns, foldOpenRunEvent, isKnownRun, openRunCount, queueDepths } from "./open-runs.ts";

const fold = (events: Array<[number, string]>) => {
  const s = emptyOpenRuns();
  for (const [seq, subject] of events) foldOpenRunEvent(s, seq, subject.split("."));
  return s;
};

describe("open runs per tenant (quota projection)", () => {
  it("counts submitted runs until a terminal event, per tenant", () => {
    const s = fold([
      [1, "run.acme.r1.submitted"],
      [2, "run.acme.r2.submitted"],
      [3, "run.globex.r1.submitted"],
      [4, "run.acme.r1.admitted"],
      [5, "run.acme.r2.completed"],
      [6, "exec.acme.e1.started"],
    ]);
    expect(openRunCount(s, "acme")).toBe(1);
    expect(openRunCount(s, "globex")).toBe(1);
    expect(openRunCount(s, "initech")).toBe(0);
    expect(s.lastSeq).toBe(6);
  });

  it("closes a run on every terminal event: completed, failed, cancelled, rejected", () => {
    const s = fold([
      [1, "run.t.a.submitted"],
      [2, "run.t.b.submitted"],
      [3, "run.t.c.submitted"],
      [4, "run.t.d.submitted"],
      [5, "run.t.a.completed"],
      [6, "run.t.b.failed"],
      [7, "run.t.c.cancelled"],
      [8, "run.t.d.rejected"],
    ]);
    expect(openRunCount(s, "t")).toBe(0);
  });

  it("counts a duplicated submission once and never reopens a finished run on a late duplicate", () => {
    const s = fold([
      [1, "run.t.a.submitted"],
      [2, "run.t.a.submitted"],
      [3, "run.t.a.completed"],
      [4, "run.t.a.submitted"],
    ]);
    expect(openRunCount(s, "t")).toBe(0);
  });

  it("is idempotent by stream sequence: a redelivered or replayed event does not count again", () => {
    const s = fold([
      [1, "run.t.a.submitted"],
      [2, "run.t.a.completed"],
      [1, "run.t.a.submitted"],
      [2, "run.t.b.submitted"],
    ]);
    expect(openRunCount(s, "t")).toBe(0);
    expect(s.lastSeq).toBe(2);
  });
});

describe("queue depth per tenant (operator view; pure fold, proves no transport)", () => {
  it("counts each tenant's runs submitted and neither started nor terminal", () => {
    const s = fold([
      [1, "run.acme.r1.submitted"],
      [2, "run.acme.r2.submitted"],
      [3, "run.acme.r3.submitted"],
      [4, "run.acme.r2.started"],
      [5, "run.globex.g1.submitted"],
      [6, "run.acme.r3.cancelled"],
      [7, "run.initech.i1.submitted"],
      [8, "run.initech.i1.rejected"],
    ]);
    expect(queueDepths(s)).toEqual({ acme: 1, globex: 1 });
  });

  it("keeps at most maxClosed closed ids, the first to close leaving first, and counts open runs exactly as without the bound (pure, no transport)", () => {
    const s = emptyOpenRuns();
    const events: Array<[number, string]> = [
      [1, "run.t.a.submitted"],
      [2, "run.u.b.submitted"],
      [3, "run.t.c.submitted"],
      [4, "run.t.a.completed"],
      [5, "run.u.b.failed"],
      [6, "run.t.d.submitted"],
      [7, "run.t.c.cancelled"],
    ];
    for (const [seq, subject] of events) foldOpenRunEvent(s, seq, subject.split("."), 2);
    expect([...s.closedOrder]).toEqual(["u b", "t c"]);
    expect(s.dropped).toBe(1);
    expect(isKnownRun(s, "t", "a")).toBe(false);
    expect(isKnownRun(s, "t", "c")).toBe(true);
    expect(openRunCount(s, "t")).toBe(openRunCount(fold(events), "t"));
  });
});
