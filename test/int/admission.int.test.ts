import { describe, expect, it } from "vitest";
import { DroverConfig, type DroverEvent } from "../../contracts/index.ts";
import type { StoredEvent } from "../../streams/index.ts";
import { eventually } from "../support/streams.ts";
import { admissionHarness } from "./admission-harness.ts";

describe("admission places runs (real NATS + Redis; runtime transport replaced by an in-memory responder)", () => {
  const adm = admissionHarness("cp-adm");

  it("places a run only on capacity visible to its tenant and records dispatched before sending, with the dispatched sequence in the command", async () => {
    await adm.readyRuntime("rt-red-1", "t-red", 5);
    await adm.readyRuntime("rt-blue-1", "t-blue", 5);
    await adm.capacityShows("rt-red-1", "rt-blue-1");
    await adm.admission();
    await adm.submit("t-blue", "run-b1");
    await eventually("dispatched", async () =>
      (await adm.types("run-b1")).includes("run.dispatched") ? true : undefined,
    );
    const h = await adm.history("run-b1");
    const dispatched = h.find((e) => e.event.type === "run.dispatched")!;
    expect(dispatched.event.type === "run.dispatched" && dispatched.event.data.runtimeInstanceId).toBe("rt-blue-1");
    expect(adm.sent).toHaveLength(1);
    expect(adm.sent[0]).toMatchObject({
      operation: "DispatchRun",
      runtimeInstanceId: "rt-blue-1",
      payload: { dispatchedSeq: dispatched.seq, tenantId: "t-blue" },
    });
  });

  it("queues runs without visible capacity and asks for exactly one scale-out for a burst, even with two admission replicas", async () => {
    await adm.readyRuntime("rt-red-2", "t-red", 5);
    await adm.capacityShows("rt-red-2");
    await Promise.all([adm.admission(), adm.admission()]);
    for (let i = 0; i < 6; i++) await adm.submit("t-blue", `run-q${i}`);
    for (let i = 0; i < 6; i++)
      await eventually("queued", async () =>
        (await adm.types(`run-q${i}`)).includes("run.scale-out-requested") ? true : undefined,
      );
    const requests: StoredEvent[] = [] as StoredEvent[];
    await adm.store.replay(
      { seq: 1 },
      (e) => {
        if (e.event.type === "scaleout.requested") requests.push(e);
      },
      { filter: `${adm.fx.layout.eventPrefix}.scaleout.>` },
    );
    expect(requests).toHaveLength(1);
    expect(adm.sent).toHaveLength(0);
    for (let i = 0; i < 6; i++)
      expect((await adm.types(`run-q${i}`)).filter((t) => t === "run.queued-globally")).toHaveLength(1);
  });

  it("admits and dispatches every run exactly once with two admission replicas competing, never over the runtime's slots", async () => {
    await adm.readyRuntime("rt-blue-a", "t-blue", 4);
    await adm.readyRuntime("rt-blue-b", "t-blue", 4);
    await adm.capacityShows("rt-blue-a", "rt-blue-b");
    // The fake runtimes beat once, so nothing ever shows a dispatched run: a dispatched run's slot
    // stays counted only while its reservation lasts (3 heartbeat intervals). At 1 s that ran out on
    // a loaded machine before the last check and the slots looked free again (11 dispatched, seen in
    // a merge's int tier). At 30 s it outlasts the test, as a real runtime's next beats would.
    const slowBeats = DroverConfig.parse({ ...adm.config, heartbeatIntervalMs: 30_000 });
    await Promise.all([adm.admission(slowBeats), adm.admission(slowBeats)]);
    for (let i = 0; i < 12; i++) await adm.submit("t-blue", `run-c${i}`);
    const placements = async () => {
      const placed = new Map<string, number>();
      for (let i = 0; i < 12; i++) {
        const h = await adm.history(`run-c${i}`);
        expect(h.filter((e) => e.event.type === "run.admitted").length, `run-c${i} admitted twice`).toBeLessThanOrEqual(
          1,
        );
        const d = h.find((e) => e.event.type === "run.dispatched");
        if (d && d.event.type === "run.dispatched")
          placed.set(d.event.data.runtimeInstanceId, (placed.get(d.event.data.runtimeInstanceId) ?? 0) + 1);
      }
      return placed;
    };
    // A replica that loses the race for a run keeps its slot reservation until it expires (3 ×
    // dispatchTimeoutMs): meanwhile a run may be queued, and is placed once the slot is free again.
    // So all 8 slots fill eventually, never more, and each placement is sent once.
    await eventually("8 runs dispatched", async () =>
      [...(await placements()).values()].reduce((a, b) => a + b, 0) === 8 ? true : undefined,
    );
    await new Promise((r) => setTimeout(r, 4 * adm.config.dispatchTimeoutMs));
    const placed = await placements();
    expect([...placed.values()].reduce((a, b) => a + b, 0)).toBe(8);
    for (const n of placed.values()) expect(n).toBeLessThanOrEqual(4);
    expect(adm.sent.filter((c) => c.operation === "DispatchRun")).toHaveLength(8);
  });

  it("records a refused dispatch as dispatch-failed with the runtime's reason and places the run again under a new LocalRunId", async () => {
    await adm.readyRuntime("rt-blue-x", "t-blue", 3);
    await adm.readyRuntime("rt-blue-y", "t-blue", 2);
    adm.refuse.add("rt-blue-x");
    await adm.capacityShows("rt-blue-x", "rt-blue-y");
    await adm.admission();
    await adm.submit("t-blue", "run-f1");
    await eventually("redispatched", async () =>
      (await adm.history("run-f1")).filter((e) => e.event.type === "run.dispatched").length === 2 ? true : undefined,
    );
    const h = (await adm.history("run-f1")).map((e) => e.event as DroverEvent);
    const failed = h.find((e) => e.type === "run.dispatch-failed");
    expect(failed?.type === "run.dispatch-failed" && failed.data.reason.code).toBe("local-queue-full");
    const lrs = h.flatMap((e) => (e.type === "run.admitted" ? [e.data.localRunId] : []));
    expect(new Set(lrs).size).toBe(2);
    const last = h.filter((e) => e.type === "run.dispatched").at(-1)!;
    expect(last.type === "run.dispatched" && last.data.runtimeInstanceId).toBe("rt-blue-y");
  });

  it("keeps a tenant at its concurrent-run quota queued with tenant-quota-exceeded", async () => {
    await adm.readyRuntime("rt-shared-1", undefined, 10);
    await adm.capacityShows("rt-shared-1");
    await adm.admission();
    for (let i = 0; i < 4; i++) await adm.submit("t-grey", `run-g${i}`);
    const outcomes = [];
    for (let i = 0; i < 4; i++)
      outcomes.push(
        await eventually("settled", async () => {
          const t = await adm.types(`run-g${i}`);
          return t.includes("run.dispatched") ? "dispatched" : t.includes("run.queued-globally") ? "queued" : undefined;
        }),
      );
    expect(outcomes.filter((o) => o === "dispatched")).toHaveLength(2);
    const queued = (await adm.history("run-g3")).find((e) => e.event.type === "run.queued-globally");
    expect(queued?.event.type === "run.queued-globally" && queued.event.data.reason.code).toBe("tenant-quota-exceeded");
  });
});
