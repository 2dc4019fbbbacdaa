import { describe, expect, it } from "vitest";
import type { DroverEvent } from "../../../contracts/index.ts";
import { PLANNED_STOP_PREFIX } from "../../../contracts/index.ts";
import { EXAMPLE_BUILDERS } from "../../../test/support/example-events.ts";
import { crashLoopOf } from "./crash-loop.ts";

const requeued = (incidentId: string) => {
  const e = EXAMPLE_BUILDERS["run.requeued-for-resume"]() as DroverEvent & { data: object };
  return { event: { ...e, data: { ...e.data, incidentId } } as DroverEvent };
};
const submitted = { event: EXAMPLE_BUILDERS["run.submitted"]() as DroverEvent };

describe("crash-loop rule (pure; proves no transport)", () => {
  it("given two earlier crash recoveries and a limit of 3, when a third crash is recovered, then the run is still resumed", () => {
    expect(crashLoopOf([submitted, requeued("inc-1"), requeued("inc-2")], "inc-3", 3)).toBeUndefined();
  });

  it("given three earlier crash recoveries and a limit of 3, when a fourth crash is recovered, then it is a crash loop naming every incident", () => {
    expect(crashLoopOf([requeued("inc-1"), requeued("inc-2"), requeued("inc-3")], "inc-4", 3)).toEqual({
      crashes: 4,
      limit: 3,
      incidents: ["inc-1", "inc-2", "inc-3", "inc-4"],
    });
  });

  it("given planned stops among the requeues, when counted, then a planned stop is never a crash, and a planned stop being recovered now never fails the run", () => {
    const stop = `${PLANNED_STOP_PREFIX}${"a".repeat(24)}`;
    expect(
      crashLoopOf([requeued(stop), requeued(`${PLANNED_STOP_PREFIX}${"b".repeat(24)}`), requeued("inc-1")], "inc-2", 2),
    ).toBeUndefined();
    expect(crashLoopOf([requeued("inc-1"), requeued("inc-2"), requeued("inc-3")], stop, 0)).toBeUndefined();
  });

  it("given a limit of 0, when the first crash is recovered, then the run fails at once", () => {
    expect(crashLoopOf([submitted], "inc-1", 0)).toMatchObject({ crashes: 1, incidents: ["inc-1"] });
  });
});
