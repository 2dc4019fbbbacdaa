import { describe, expect, it } from "vitest";
import { randomIds, systemClock } from "../../platform/envelope.ts";
import { runRef } from "../../streams/index.ts";
import { looseEvent } from "../support/loose-event.ts";
import { eventually } from "../support/streams.ts";
import { admissionHarness } from "./admission-harness.ts";

describe("admission finishes placements a dead replica left half done (real NATS + Redis; runtime transport replaced by an in-memory responder)", () => {
  const adm = admissionHarness("cp-adm-orphans");

  it("finishes runs a dead replica left admitted-not-dispatched (dispatches the same LocalRunId) or dispatched-but-never-sent (re-sends after GetRunStatus says unknown)", async () => {
    await adm.readyRuntime("rt-blue-d", "t-blue", 5);
    await adm.capacityShows("rt-blue-d");
    // What a replica that died right after its append leaves behind (its reservations lapse with it).
    const dead = {
      writer: { service: "admission" as const, instanceId: "adm-dead" },
      clock: systemClock,
      ids: randomIds,
    };
    const placement = (id: string, lr: string, dispatched: boolean) => [
      looseEvent(
        dead,
        "run.admitted",
        {
          runtimeInstanceId: "rt-blue-d",
          localRunId: lr,
          reservationId: `rt-blue-d/${id}`,
          candidates: [],
          recovery: false,
        },
        { tenantId: "t-blue", correlationId: id, causationId: "dead" },
      ),
      ...(dispatched
        ? [
            looseEvent(
              dead,
              "run.dispatched",
              { runtimeInstanceId: "rt-blue-d", localRunId: lr, transport: "http", hostIncarnation: "pid:1:1" },
              { tenantId: "t-blue", correlationId: id, causationId: "dead" },
            ),
          ]
        : []),
    ];
    await adm.submit("t-blue", "run-orphan-a");
    await adm.store.appendAll(runRef("t-blue", "run-orphan-a"), placement("run-orphan-a", "lr-orphan-a", false), {
      expectedSeq: await adm.store.lastSeq(runRef("t-blue", "run-orphan-a")),
    });
    await adm.submit("t-blue", "run-orphan-d");
    await adm.store.appendAll(runRef("t-blue", "run-orphan-d"), placement("run-orphan-d", "lr-orphan-d", true), {
      expectedSeq: await adm.store.lastSeq(runRef("t-blue", "run-orphan-d")),
    });
    adm.unknownRuns.add("lr-orphan-d");
    await adm.admission();
    const dispatchesOf = (lr: string) =>
      adm.sent.filter((c) => c.operation === "DispatchRun" && c.payload.localRunId === lr);
    await eventually("both orphans sent", async () =>
      dispatchesOf("lr-orphan-a").length > 0 && dispatchesOf("lr-orphan-d").length > 0 ? true : undefined,
    );
    const a = await adm.history("run-orphan-a");
    expect(a.map((e) => e.event.type)).toEqual(["run.submitted", "run.admitted", "run.dispatched"]);
    const dispatchedA = a[2]!;
    expect(dispatchedA.event.type === "run.dispatched" && dispatchedA.event.data.localRunId).toBe("lr-orphan-a");
    expect(dispatchesOf("lr-orphan-a")[0]).toMatchObject({
      payload: { dispatchedSeq: dispatchedA.seq, sharedRunId: "run-orphan-a" },
    });
    // The dispatched one was asked about first, then re-sent under the same LocalRunId and sequence, with no second dispatched event.
    const d = await adm.history("run-orphan-d");
    expect(d.map((e) => e.event.type)).toEqual(["run.submitted", "run.admitted", "run.dispatched"]);
    expect(
      adm.sent.findIndex((c) => c.operation === "GetRunStatus" && c.payload.localRunId === "lr-orphan-d"),
    ).toBeLessThan(adm.sent.findIndex((c) => c.operation === "DispatchRun" && c.payload.localRunId === "lr-orphan-d"));
    expect(dispatchesOf("lr-orphan-d")[0]).toMatchObject({ payload: { dispatchedSeq: d[2]!.seq } });
  });
});
