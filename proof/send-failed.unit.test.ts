import { describe, expect, it } from "vitest";
import type { KillRecord, LoggedEvent } from "./assertions.ts";
import { checkSentAgain, recordsExpected, sendFailedAtKill } from "./send-failed.ts";

/** Just the fields the classification reads: a test of pure log logic (proves no transport). */
const ev = (seq: number, run: string, type: string, data: object = {}): LoggedEvent =>
  ({ seq, subject: `drover.run.acme.${run}.${type.slice(4)}`, event: { type, data } }) as unknown as LoggedEvent;
const kill = { tenantId: "acme", runtimeInstanceId: "rt-1", sharedRunId: "r1" } as KillRecord;
const runs = ["r1", "r2", "r3"].map((sharedRunId) => ({ tenantId: "acme", sharedRunId }));

describe("runs whose send to the killed runtime failed, classified by the log (pure: proves no transport)", () => {
  const log = [
    ev(1, "r2", "run.dispatched", { runtimeInstanceId: "rt-1" }),
    ev(2, "r3", "run.dispatched", { runtimeInstanceId: "rt-1" }),
    ev(3, "r3", "run.dispatch-failed", { runtimeInstanceId: "rt-1" }),
    ev(4, "r2", "run.requeued-for-local-queued-recovery"),
    ev(5, "r2", "run.started"),
    ev(6, "r3", "run.started"),
  ];
  const byRun = new Map<string, LoggedEvent[]>();
  for (const e of log) {
    const run = e.subject.split(".")[3]!;
    byRun.set(`acme/${run}`, [...(byRun.get(`acme/${run}`) ?? []), e]);
  }

  it("a run requeued for local-queued recovery is not a failed send; one with a failed send to the killed runtime is", () => {
    expect(sendFailedAtKill(byRun, kill, "r2")).toBeUndefined();
    expect(sendFailedAtKill(byRun, kill, "r3")).toEqual({ failedAt: 1 });
    // A failed send to another runtime says nothing about this kill.
    expect(sendFailedAtKill(byRun, { ...kill, runtimeInstanceId: "rt-2" }, "r3")).toBeUndefined();
  });

  it("a run sent again must not have started before the failure and must start exactly once after it", () => {
    expect(checkSentAgain(byRun.get("acme/r3")!, 1, "r3")).toEqual([]);
    const twice = [...byRun.get("acme/r3")!, ev(7, "r3", "run.started")];
    expect(checkSentAgain(twice, 1, "r3")).toEqual(["r3: not started exactly once after its failed send"]);
    const early = [ev(0, "r3", "run.started"), ...byRun.get("acme/r3")!];
    expect(checkSentAgain(early, 2, "r3")).toEqual(["r3: started before its send to the killed runtime failed"]);
  });

  it("expects one record for the killed execution plus one per local-queued run, none for the failed send", () => {
    expect(recordsExpected(log, [kill], runs)).toEqual(new Map([["acme", 2]]));
    expect(recordsExpected(log.slice(0, 2), [kill], runs)).toEqual(new Map([["acme", 3]]));
  });
});
