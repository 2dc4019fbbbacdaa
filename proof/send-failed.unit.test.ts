import { describe, expect, it } from "vitest";
import type { KillRecord, LoggedEvent } from "./assertions.ts";
import { assertProof } from "./assertions.ts";
import { checkSentAgain, notQueuedAtKill, recordsExpected } from "./send-failed.ts";

/** Just the fields the classification reads: a test of pure log logic (proves no transport). */
const ev = (seq: number, run: string, type: string, data: object = {}): LoggedEvent =>
  ({ seq, subject: `drover.run.acme.${run}.${type.slice(4)}`, event: { type, data } }) as unknown as LoggedEvent;
const kill = { tenantId: "acme", runtimeInstanceId: "rt-1", sharedRunId: "r1" } as KillRecord;
const runs = ["r1", "r2", "r3"].map((sharedRunId) => ({ tenantId: "acme", sharedRunId }));
const on = (rt: string) => ({ runtimeInstanceId: rt });
const byRunOf = (log: readonly LoggedEvent[]) => {
  const byRun = new Map<string, LoggedEvent[]>();
  for (const e of log) {
    const run = e.subject.split(".")[3]!;
    byRun.set(`acme/${run}`, [...(byRun.get(`acme/${run}`) ?? []), e]);
  }
  return byRun;
};
const localQueued = (log: readonly LoggedEvent[]) =>
  assertProof(log, { impactedTenants: ["acme"], safeTenants: [], runs, kills: [kill] }, 1).find((a) =>
    a.name.startsWith("local-queued:"),
  )!;

describe("runs whose send to the killed runtime failed, classified by the log (pure: proves no transport)", () => {
  const log = [
    ev(1, "r2", "run.admitted", on("rt-1")),
    ev(2, "r2", "run.dispatched", on("rt-1")),
    ev(3, "r3", "run.admitted", on("rt-1")),
    ev(4, "r3", "run.dispatched", on("rt-1")),
    ev(5, "r3", "run.dispatch-failed", on("rt-1")),
    ev(6, "r2", "run.requeued-for-local-queued-recovery"),
    ev(7, "r2", "run.started"),
    ev(8, "r3", "run.started"),
  ];
  const byRun = byRunOf(log);

  it("a run requeued for local-queued recovery is not a failed send; one with a failed send to the killed runtime is", () => {
    expect(notQueuedAtKill(byRun, kill, "r2")).toBeUndefined();
    expect(notQueuedAtKill(byRun, kill, "r3")).toEqual({ kind: "send-failed", at: 2 });
    // A failed send to another runtime says nothing about this kill (nor does a placement there).
    expect(notQueuedAtKill(byRun, { ...kill, runtimeInstanceId: "rt-2" }, "r3")).toEqual({
      kind: "never-placed",
      at: 0,
    });
  });

  it("a run sent again must not have started before the failure and must start exactly once after it", () => {
    const failed = { kind: "send-failed", at: 2 } as const;
    expect(checkSentAgain(byRun.get("acme/r3")!, failed, "r3")).toEqual([]);
    const twice = [...byRun.get("acme/r3")!, ev(9, "r3", "run.started")];
    expect(checkSentAgain(twice, failed, "r3")).toEqual(["r3: not started exactly once after its failed send"]);
    const early = [ev(0, "r3", "run.started"), ...byRun.get("acme/r3")!];
    expect(checkSentAgain(early, { ...failed, at: 3 }, "r3")).toEqual([
      "r3: started before its send to the killed runtime failed",
    ]);
  });

  it("expects one record for the killed execution plus one per local-queued run, none for the failed send", () => {
    expect(recordsExpected(log, [kill], runs)).toEqual({
      records: new Map([["acme", 2]]),
      notQueued: { sendFailed: 1, neverPlaced: 0 },
    });
    expect(recordsExpected(log.slice(0, 4), [kill], runs).records).toEqual(new Map([["acme", 3]]));
  });
});

describe("a run admission had not placed when its runtime was killed, classified by the log (pure: proves no transport)", () => {
  // The failure seen at load ~27: r2 was sent after the kill (its send failed); r3 was still queued,
  // and once the runtime was fenced admission placed it on the replacement rt-2.
  const log = [
    ev(1, "r2", "run.admitted", on("rt-1")),
    ev(2, "r2", "run.dispatched", on("rt-1")),
    ev(3, "r2", "run.dispatch-failed", on("rt-1")),
    ev(4, "r3", "run.queued-globally"),
    ev(5, "r2", "run.admitted", on("rt-2")),
    ev(6, "r3", "run.admitted", on("rt-2")),
    ev(7, "r2", "run.started"),
    ev(8, "r3", "run.started"),
    ev(9, "r2", "run.completed"),
    ev(10, "r3", "run.completed"),
  ];

  it("is not a missing local-queued recovery: it never reached the killed runtime and started once", () => {
    expect(notQueuedAtKill(byRunOf(log), kill, "r3")).toEqual({ kind: "never-placed", at: 0 });
    expect(localQueued(log)).toMatchObject({ ok: true });
    expect(localQueued(log).detail).toContain("1 not yet placed at the kill placed on the replacement");
    expect(recordsExpected(log, [kill], runs)).toEqual({
      records: new Map([["acme", 1]]),
      notQueued: { sendFailed: 1, neverPlaced: 1 },
    });
  });

  it("still fails when such a run started twice or never", () => {
    expect(localQueued([...log, ev(11, "r3", "run.started")]).detail).toContain(
      "r3: not started exactly once after its placement elsewhere",
    );
    expect(localQueued(log.filter((e) => !(e.subject.includes(".r3.") && e.event.type === "run.started"))).ok).toBe(
      false,
    );
  });

  it("still fails when a run admitted to the killed runtime is neither requeued nor failed to send", () => {
    const missed = [ev(0, "r3", "run.admitted", on("rt-1")), ...log];
    expect(notQueuedAtKill(byRunOf(missed), kill, "r3")).toBeUndefined();
    expect(localQueued(missed).detail).toContain("r3: not requeued for local-queued recovery");
  });
});
