import { describe, expect, it } from "vitest";
import { eventually } from "../support/streams.ts";
import { admissionHarness } from "./admission-harness.ts";

/**
 * Issue 15 (recovery at P=5): a run waiting for capacity is placed as soon as the capacity view shows
 * a runtime it may take, not at admission's next tick. The capacity projection announces a put that
 * may make a runtime placeable (a runtime event, an incarnation's first beat) and admission starts a
 * pass on it. The tick here is a minute, so only the announcement can place the run within the bound.
 * Real NATS, Redis and capacity projection; the runtime transport is an in-memory responder.
 */
describe("admission wakes on the capacity view's announcements (real NATS + Redis)", () => {
  const adm = admissionHarness("cp-admwake");

  it("a queued run is dispatched within 3 s of its runtime's capacity, with admission's tick at 60 s", async () => {
    await adm.admission(undefined, 60_000);
    await adm.submit("t-blue", "run-w1");
    await eventually("queued for a scale-out", async () =>
      (await adm.types("run-w1")).includes("run.scale-out-requested") ? true : undefined,
    );
    const before = adm.sent.length;
    const publishedAt = Date.now();
    await adm.readyRuntime("rt-blue-w1", "t-blue", 5);
    // run.dispatched is the intent, appended before the send: wait for the send too, or a slow
    // send (a loaded machine) is still on its way when the command list is read.
    await eventually(
      "dispatched and sent",
      async () =>
        (await adm.types("run-w1")).includes("run.dispatched") && adm.sent.length > before ? true : undefined,
      3_000,
    );
    expect(Date.now() - publishedAt).toBeLessThan(3_000);
    expect(adm.sent.slice(before)).toMatchObject([{ operation: "DispatchRun", runtimeInstanceId: "rt-blue-w1" }]);
  });
});
