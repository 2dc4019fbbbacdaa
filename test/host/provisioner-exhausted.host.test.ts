import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { consumeScaleOutRequests } from "../../services/provisioner/index.ts";
import type { ConsumerRunner, EventStore } from "../../streams/index.ts";
import { provisionerFixture, type ProvisionerFixture } from "../support/provisioner-fixture.ts";

// A real nats-server and the provisioner's real durable consumer (maxDeliver 10): a request whose
// every delivery fails is closed on the last one, not left open forever.
let f: ProvisionerFixture;
let runners: ConsumerRunner[] = [];
beforeAll(async () => {
  f = await provisionerFixture(inject("natsUrl"));
});
afterAll(async () => {
  await Promise.all(runners.map((r) => r.stop()));
  await f?.close();
});

/** The store, except that every `scaleout.observed` append fails as an unreachable store would. */
const observeFails = (store: EventStore, tries: { n: number }): EventStore => ({
  ...store,
  append: (ref, e, o) => {
    if (e.type !== "scaleout.observed") return store.append(ref, e, o);
    tries.n++;
    return Promise.reject(new Error("store unavailable (test)"));
  },
});

describe("scale-out deliveries exhausted (real nats-server and durable consumer)", () => {
  it("a request whose every delivery fails ends rejected with scale-out-deliveries-exhausted on the 10th delivery, conditionally, once", async () => {
    const tries = { n: 0 };
    const { provisioner } = f.provisioner({ store: observeFails(f.store, tries) });
    runners = await consumeScaleOutRequests(f.streams, f.streams.layout, provisioner, 2, 5_000, [20]);
    const req = await f.request("tenant-ex", "cp-ex");
    const events = await f.settled("tenant-ex", req.event.correlationId, 60_000);
    expect(events.map((s) => s.event.type)).toEqual(["scaleout.requested", "scaleout.rejected"]);
    expect(events[1]?.event).toMatchObject({
      type: "scaleout.rejected",
      data: { reason: { code: "scale-out-deliveries-exhausted" } },
    });
    expect(String((events[1]?.event.data as { reason: { detail: string } }).reason.detail)).toContain(
      "store unavailable (test)",
    );
    expect(tries.n).toBe(10);
  }, 90_000);
});
