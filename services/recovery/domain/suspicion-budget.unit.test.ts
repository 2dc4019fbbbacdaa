import { describe, expect, it } from "vitest";
import { RuntimeInstanceId, type DroverEvent } from "../../../contracts/index.ts";
import { exampleEvent } from "../../../test/support/example-events.ts";
import { emptyRuntime, evolveRuntime, suspicion, type RuntimeEvent, type RuntimeRecord } from "./runtime-health.ts";
import { budgetSuspicions, type Candidate } from "./suspicion-budget.ts";

const record = (id: string, extra: DroverEvent[] = []): RuntimeRecord =>
  [
    exampleEvent("runtime.registered"),
    exampleEvent("runtime.host-started"),
    exampleEvent("runtime.capacity-published"),
    ...extra,
  ].reduce((r, e, i) => evolveRuntime(r, e as RuntimeEvent, i + 1, 1_000), emptyRuntime(RuntimeInstanceId.parse(id)));
const staleSuspected = (id: string) =>
  record(id, [
    {
      ...exampleEvent("runtime.suspected"),
      data: { ...exampleEvent("runtime.suspected").data, reason: { code: "heartbeat-stale", detail: "" } },
    } as DroverEvent,
  ]);
const fleet = (n: number) => Array.from({ length: n }, (_, i) => record(`rt-${i}`));
const stale = (id: string): Candidate => ({ runtimeInstanceId: id, code: "heartbeat-stale", detail: "no heartbeat" });
const exited = (id: string): Candidate => ({ runtimeInstanceId: id, code: "host-exited", detail: "exited (exit 137)" });

describe("fence-storm cap: heartbeat silence alone suspects a bounded share of the live fleet at once (pure decider; proves no transport)", () => {
  it("given 10 live runtimes all silent (a NATS outage, a clock jump), when share is 0.3, then 3 are suspected and 7 held with fence-storm-cap", () => {
    const runtimes = fleet(10);
    const { suspect, held } = budgetSuspicions(
      runtimes,
      runtimes.map((r) => stale(r.runtimeInstanceId)),
      0.3,
    );
    expect(suspect.map((c) => c.runtimeInstanceId)).toEqual(["rt-0", "rt-1", "rt-2"]);
    expect(held).toHaveLength(7);
    expect(held.every((h) => h.reason === "fence-storm-cap")).toBe(true);
    expect(held[0]!.holdDetail).toBe(
      "3 of 10 live runtimes already suspected on heartbeat silence or lost connections (cap 3, share 0.3)",
    );
  });

  it("given silent runtimes already under suspicion, when more go silent, then only the remaining budget is suspected", () => {
    const runtimes = [staleSuspected("rt-a"), staleSuspected("rt-b"), ...fleet(4)];
    const { suspect, held } = budgetSuspicions(runtimes, [stale("rt-0"), stale("rt-1")], 0.5);
    expect(suspect.map((c) => c.runtimeInstanceId)).toEqual(["rt-0"]);
    expect(held.map((h) => h.runtimeInstanceId)).toEqual(["rt-1"]);
  });

  it("given a host-proven death (process exited, Pod deleted), when the budget is spent, then it is suspected anyway", () => {
    const runtimes = [staleSuspected("rt-a"), ...fleet(3)];
    const pod: Candidate = { runtimeInstanceId: "rt-2", code: "pod-deleted", detail: "deleted" };
    const { suspect, held } = budgetSuspicions(runtimes, [stale("rt-0"), exited("rt-1"), pod], 0.25);
    expect(suspect.map((c) => c.code)).toEqual(["host-exited", "pod-deleted"]);
    expect(held.map((h) => h.runtimeInstanceId)).toEqual(["rt-0"]);
  });

  it("given lost connections (a NATS connection closed and a refused command endpoint), then they share heartbeat silence's budget: a host-proven death does not", () => {
    const runtimes = [staleSuspected("rt-a"), ...fleet(5)];
    const lost = (id: string): Candidate => ({ runtimeInstanceId: id, code: "connection-lost", detail: "refused" });
    const { suspect, held } = budgetSuspicions(
      runtimes,
      [lost("rt-0"), lost("rt-1"), stale("rt-2"), exited("rt-3")],
      0.5,
    );
    expect(suspect.map((c) => [c.runtimeInstanceId, c.code])).toEqual([
      ["rt-0", "connection-lost"],
      ["rt-1", "connection-lost"],
      ["rt-3", "host-exited"],
    ]);
    expect(held.map((h) => h.runtimeInstanceId)).toEqual(["rt-2"]);
  });

  it("given a fleet of one or two, when one goes silent, then it is suspected (the cap is at least one)", () => {
    expect(budgetSuspicions(fleet(1), [stale("rt-0")], 0.1).suspect).toHaveLength(1);
    expect(budgetSuspicions(fleet(2), [stale("rt-0"), stale("rt-1")], 0.5).suspect).toHaveLength(1);
  });

  it("given recovered (planned) and retired runtimes, then they count neither in the fleet nor against the budget", () => {
    const planned = record("rt-p", [
      exampleEvent("runtime.suspected"),
      exampleEvent("runtime.fenced"),
      exampleEvent("runtime.recovery-planned"),
    ]);
    const retired = record("rt-r", [exampleEvent("runtime.retired")]);
    const runtimes = [planned, retired, ...fleet(4)];
    const { suspect } = budgetSuspicions(
      runtimes,
      fleet(4).map((r) => stale(r.runtimeInstanceId)),
      0.5,
    );
    expect(suspect).toHaveLength(2);
  });

  it("given the whole fleet silent, when the held runtimes are checked on the next pass, then each is still a candidate from suspicion() and suspected once the first batch is recovered", () => {
    // Pass 1: the whole fleet of 4 silent, share 0.5 → 2 suspected.
    const now = 1_000_000;
    const runtimes = fleet(4);
    const silent = runtimes.map((r) => ({ runtimeInstanceId: r.runtimeInstanceId, ...suspicion(r, 0, now, 750)! }));
    const first = budgetSuspicions(runtimes, silent, 0.5);
    expect(first.suspect).toHaveLength(2);
    // Pass 2: those two are recovered; the two held are live and silent: now they are suspected.
    const recovered = runtimes.map((r, i) =>
      i < 2
        ? record(r.runtimeInstanceId, [
            exampleEvent("runtime.suspected"),
            exampleEvent("runtime.fenced"),
            exampleEvent("runtime.recovery-planned"),
          ])
        : r,
    );
    const second = budgetSuspicions(recovered, first.held, 0.5);
    expect(second.suspect.map((c) => c.runtimeInstanceId)).toEqual(["rt-2"]);
    // with 2 live (the held two), the cap is max(1, floor(0.5 × 2)) = 1: one at a time
    expect(second.held.map((h) => h.runtimeInstanceId)).toEqual(["rt-3"]);
  });
});
