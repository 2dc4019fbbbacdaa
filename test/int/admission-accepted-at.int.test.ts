import { jetstream } from "@nats-io/jetstream";
import { describe, expect, it } from "vitest";
import type { CapacityDescriptor } from "../../aggregates/capacity/descriptor.ts";
import { redisCapacityView } from "../../platform/capacity-view.ts";
import { reservationKeys } from "../../platform/reservations.ts";
import { publishBeat } from "../support/fake-runtime-capacity.ts";
import { eventually } from "../support/streams.ts";
import { admissionHarness } from "./admission-harness.ts";

describe("a dispatched run's slot is counted once (real NATS + Redis + capacity projection; runtime transport replaced by an in-memory responder)", () => {
  const adm = admissionHarness("cp-adm-accepted");
  /** Waits for the answer's slot extend: only it puts the run in the runtime's accepted set. */
  const acceptedInRedis = (rt: string, run: string) =>
    eventually("the answer's slot extend in Redis", async () =>
      (await adm.redis.zscore(reservationKeys(adm.cp, rt)[1], run)) === null ? undefined : true,
    );

  it("a heartbeat the runtime took while its answer to the dispatch was on the way back already counts the run: the next run takes the place that beat left free", async () => {
    await adm.readyRuntime("rt-blue-acc", "t-blue", 2);
    await adm.capacityShows("rt-blue-acc");
    await adm.admission();
    // The runtime accepted run-a1 and answered; before admission reads the answer, it beats once,
    // showing run-a1 (1 place left of 2), and the capacity view has that beat.
    adm.answerInTransit = async () => {
      await new Promise((ok) => setTimeout(ok, 20));
      await publishBeat(jetstream(adm.fx.nc), adm.fx.layout, "rt-blue-acc", 2, 1);
      await eventually("the beat showing run-a1 is in the view", async () => {
        const d = (await redisCapacityView<CapacityDescriptor>(adm.redis, adm.cp).all()).find(
          (x) => x.runtimeInstanceId === "rt-blue-acc",
        );
        return d?.beats["pid:1:1"]?.beat === 2 ? true : undefined;
      });
      await new Promise((ok) => setTimeout(ok, 20));
    };
    await adm.submit("t-blue", "run-a1");
    await eventually("run-a1 dispatched and answered", async () =>
      (await adm.types("run-a1")).includes("run.dispatched") && adm.sent.length === 1 ? true : undefined,
    );
    adm.answerInTransit = undefined;
    await acceptedInRedis("rt-blue-acc", "run-a1");
    await adm.submit("t-blue", "run-a2");
    const decided = await eventually("run-a2 decided", async () => {
      const types = await adm.types("run-a2");
      return types.includes("run.admitted") || types.includes("run.queued-globally") ? types : undefined;
    });
    // Counted twice (the beat and the reservation), the runtime looked full and run-a2 was queued.
    expect(decided).toContain("run.admitted");
    expect(decided).not.toContain("run.queued-globally");
  });

  it("a heartbeat the runtime took before it accepted a run but the stream stored after the answer does not show the run: its reservation still counts and the runtime is not over-committed", async () => {
    await adm.readyRuntime("rt-blue-late", "t-blue", 2);
    await adm.capacityShows("rt-blue-late");
    await adm.admission();
    // The runtime took a beat (2 free: run-b1 not in it yet), then accepted run-b1 and answered; the
    // beat reached the stream only after the answer was built (its publish waited on the runtime's
    // loop or on the server): stored later than the answer, taken earlier.
    adm.answerInTransit = async (c) => {
      const takenAt = new Date(Date.parse(adm.lastAnswerAt(c)) - 5);
      await new Promise((ok) => setTimeout(ok, 20));
      await publishBeat(jetstream(adm.fx.nc), adm.fx.layout, "rt-blue-late", 2, 2, takenAt);
      await eventually("the late-stored beat is in the view", async () => {
        const d = (await redisCapacityView<CapacityDescriptor>(adm.redis, adm.cp).all()).find(
          (x) => x.runtimeInstanceId === "rt-blue-late",
        );
        return d?.beats["pid:1:1"]?.beat === 2 ? true : undefined;
      });
    };
    await adm.submit("t-blue", "run-b1");
    await eventually("run-b1 dispatched and answered", async () =>
      (await adm.types("run-b1")).includes("run.dispatched") && adm.sent.length === 1 ? true : undefined,
    );
    adm.answerInTransit = undefined;
    await acceptedInRedis("rt-blue-late", "run-b1");
    await adm.submit("t-blue", "run-b2");
    await adm.submit("t-blue", "run-b3");
    const decided = await eventually("run-b2 and run-b3 decided", async () => {
      const all = await Promise.all(["run-b2", "run-b3"].map((id) => adm.types(id)));
      const d = all.map((t) =>
        t.includes("run.admitted") ? "admitted" : t.includes("run.queued-globally") ? "queued" : undefined,
      );
      return d.every(Boolean) ? d.sort() : undefined;
    });
    // 2 places by the beat, run-b1 holding one: one more run fits. Counting run-b1 as shown by a
    // beat taken before it was accepted admitted both (3 runs sent to 2 places).
    expect(decided).toEqual(["admitted", "queued"]);
  });
});
