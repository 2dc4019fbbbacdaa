import { describe, expect, it } from "vitest";
import { RuntimeInstanceId, type DroverEvent } from "../../../contracts/index.ts";
import { exampleEvent } from "../../../test/support/example-events.ts";
import { failureTime, isOpenIncident } from "./incident-clock.ts";
import { emptyRuntime, evolveRuntime } from "./runtime-health.ts";

type RuntimeEvent = Parameters<typeof evolveRuntime>[1];
/** Folds [event, stored ms] pairs. */
const fold = (events: [DroverEvent, number][]) =>
  events.reduce(
    (r, [e, ms], i) => evolveRuntime(r, e as RuntimeEvent, i + 1, ms),
    emptyRuntime(RuntimeInstanceId.parse("rt-a")),
  );
const live: [DroverEvent, number][] = [
  [exampleEvent("runtime.registered"), 100],
  [exampleEvent("runtime.host-started"), 200],
  [exampleEvent("runtime.capacity-published"), 300],
];
const suspected = (code: string): DroverEvent => {
  const e = exampleEvent("runtime.suspected");
  return { ...e, data: { ...e.data, reason: { code, detail: "" } } } as DroverEvent;
};

describe("incident clock: when a runtime failed and whether its incident is open (pure; proves no transport)", () => {
  it("measures from the recorded host exit when the exit is what made the runtime suspect", () => {
    const r = fold([...live, [exampleEvent("runtime.host-exited"), 5_000], [suspected("host-exited"), 5_040]]);
    expect(failureTime(r, 4_000)).toEqual({ basis: "host-exit", atMs: 5_000 });
  });

  it("measures from the last heartbeat when the runtime went silent, even if the fence's kill is recorded as an exit later", () => {
    const r = fold([...live, [suspected("heartbeat-stale"), 9_000], [exampleEvent("runtime.host-exited"), 9_100]]);
    expect(failureTime(r, 4_000)).toEqual({ basis: "last-heartbeat", atMs: 4_000 });
    expect(failureTime(r, undefined)).toEqual({ basis: "last-heartbeat", atMs: 300 });
    expect(failureTime(fold(live.slice(0, 2)), undefined)).toBeUndefined();
  });

  it("an incident is open from suspected until every planned item's record ended", () => {
    expect(isOpenIncident(fold(live), () => true)).toBe(false);
    const planned = fold([...live, [suspected("host-exited"), 1], [exampleEvent("runtime.recovery-planned"), 2]]);
    expect(isOpenIncident(fold([...live, [suspected("host-exited"), 1]]), () => true)).toBe(true);
    expect(planned.plannedItemIds?.length).toBeGreaterThan(1);
    const first = planned.plannedItemIds![0]!;
    expect(isOpenIncident(planned, (id) => id === first)).toBe(true);
    expect(isOpenIncident(planned, () => true)).toBe(false);
  });
});
