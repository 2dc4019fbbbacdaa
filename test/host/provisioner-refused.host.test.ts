import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { DroverError } from "../../contracts/index.ts";
import { consumeScaleOutRequests } from "../../services/provisioner/index.ts";
import type { ConsumerRunner, EventStore } from "../../streams/index.ts";
import { provisionerFixture, type ProvisionerFixture } from "../support/provisioner-fixture.ts";

// A real nats-server and the provisioner's real durable consumer: a delivery that fails with an error
// the consumer terminates (no redelivery follows) closes the request, as the last delivery does.
let f: ProvisionerFixture;
let runners: ConsumerRunner[] = [];
beforeAll(async () => {
  f = await provisionerFixture(inject("natsUrl"));
});
afterAll(async () => {
  await Promise.all(runners.map((r) => r.stop()));
  await f?.close();
});

/** The store, except that the first `scaleout.observed` append is refused as JetStream refuses a request (non-retryable). */
const observeRefusedOnce = (store: EventStore, tries: { n: number }): EventStore => ({
  ...store,
  append: (ref, e, o) => {
    if (e.type !== "scaleout.observed" || tries.n++ > 0) return store.append(ref, e, o);
    return Promise.reject(
      new DroverError("event-store-unavailable", "JetStream refused the request (test)", { retryable: false }),
    );
  },
});

describe("scale-out delivery terminated (real nats-server and durable consumer)", () => {
  it("a request whose delivery fails with a non-retryable error is closed at once, not left open with no delivery to come", async () => {
    const tries = { n: 0 };
    const { provisioner } = f.provisioner({ store: observeRefusedOnce(f.store, tries) });
    runners = await consumeScaleOutRequests(f.streams, f.streams.layout, provisioner, 2, 5_000, [20]);
    const req = await f.request("tenant-term", "cp-term");
    // Before: the consumer terminated the delivery and nothing else ever looked at the request.
    const events = await f.settled("tenant-term", req.event.correlationId, 20_000);
    expect(events.map((s) => s.event.type)).toEqual(["scaleout.requested", "scaleout.rejected"]);
    expect(events[1]?.event).toMatchObject({
      type: "scaleout.rejected",
      data: { reason: { code: "scale-out-deliveries-exhausted" } },
    });
    expect(String((events[1]?.event.data as { reason: { detail: string } }).reason.detail)).toContain(
      "JetStream refused the request (test)",
    );
    expect(tries.n).toBe(1);
  }, 60_000);
});
