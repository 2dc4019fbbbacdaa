import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { consumeScaleOutRequests } from "../../services/provisioner/index.ts";
import type { ConsumerRunner, EventStore } from "../../streams/index.ts";
import { provisionerFixture, type ProvisionerFixture } from "../support/provisioner-fixture.ts";

// A real nats-server and the provisioner's real durable consumer. On an R3 stream the handler's read
// of a request it was delivered may be answered by a replica that has not applied it yet: the leader
// that acked and delivered it died (the `nats-leader-kill` proof, session 29, where a recovery
// replacement requested at the leader's kill was never driven and admission's runs waited on it for
// minutes). The store below answers as such a replica for the first reads of the request.
let f: ProvisionerFixture;
let runners: ConsumerRunner[] = [];
beforeAll(async () => {
  f = await provisionerFixture(inject("natsUrl"));
});
afterAll(async () => {
  await Promise.all(runners.map((r) => r.stop()));
  await f?.close();
});

/** The store, except that the first `behind.n` reads of a scale-out request find nothing, as a replica behind its leader. */
const behindFor = (store: EventStore, behind: { n: number; reads: number }): EventStore => ({
  ...store,
  read: async (ref, o) => {
    const h = await store.read(ref, o);
    if (ref.aggregate !== "scaleout") return h;
    behind.reads++;
    if (behind.n <= 0) return h;
    behind.n--;
    return { events: [], lastSeq: 0 };
  },
});

describe("scale-out request read from a replica behind (real nats-server and durable consumer)", () => {
  it("is driven once the read has it, never acked as if there were nothing to drive", async () => {
    const behind = { n: 2, reads: 0 };
    const { provisioner } = f.provisioner({ store: behindFor(f.store, behind) });
    runners = await consumeScaleOutRequests(f.streams, f.streams.layout, provisioner, 2, 5_000, [20]);
    // No kubernetes strategy here: the request is driven to a rejection (host-config-missing), no host started.
    const req = await f.request("tenant-behind", "cp-behind", {}, { providerHint: "kubernetes" });
    // Before: the first delivery read "no such request", acked, and the request stayed open for good.
    const events = await f.settled("tenant-behind", req.event.correlationId, 30_000);
    expect(events.map((s) => s.event.type)).toEqual(["scaleout.requested", "scaleout.observed", "scaleout.rejected"]);
    expect(events[2]?.event).toMatchObject({ data: { reason: { code: "host-config-missing" } } });
    expect(behind.n).toBe(0);
  }, 60_000);
});
