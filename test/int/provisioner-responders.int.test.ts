import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { TenantId } from "../../contracts/index.ts";
import { credentialOf } from "../../platform/nats-auth/credentials.ts";
import { runtimePasswordFor } from "../../platform/nats-auth/runtime-rights.ts";
import { serverKeysOf } from "../../platform/nats-auth/server-keys.ts";
import { connectNats } from "../../platform/nats-connect.ts";
import { setupNats } from "../../platform/nats-setup.ts";
import { snapshotStreamOf } from "../../platform/snapshots/store.ts";
import { startResponders, type Responders } from "../../services/provisioner/index.ts";
import { createEventStore, execRef, runtimeRef, type EventStore } from "../../streams/index.ts";
import { uniqueName } from "../support/isolation.ts";
import { AUTH_TEST_SECRET } from "../support/nats-auth-fixture.ts";
import { event, freshStreams, type StreamsFixture } from "../support/streams.ts";

const url = () => inject("natsUrl");
const acme = TenantId.parse("acme");
const quiet = { info: () => undefined, warn: () => undefined, error: () => undefined };

describe("the provisioner's responders thread mints runtime credentials and answers history under the provisioner's identity (boundary: a worker thread's own connection to a real nats-server with auth callout)", () => {
  let f: StreamsFixture;
  let store: EventStore;
  let responders: Responders;

  beforeAll(async () => {
    const keys = serverKeysOf(url())!;
    f = await freshStreams(url(), "resp");
    await setupNats(f.jsm, f.layout);
    store = createEventStore(f.nc, f.layout);
    responders = await startResponders(
      {
        servers: url(),
        creds: credentialOf(keys, "provisioner"),
        name: uniqueName("provisioner-responders"),
        layout: f.layout,
        callout: { seed: keys.calloutSeed, secret: AUTH_TEST_SECRET, ttlMs: 60_000 },
      },
      quiet,
    );
  });
  afterAll(async () => {
    await f.jsm.streams.delete(snapshotStreamOf(f.layout)).catch(() => undefined);
    await f.close();
  });

  const runtimeCreds = (id: string) => `${id}:${runtimePasswordFor(AUTH_TEST_SECRET, f.layout.eventPrefix, id)}`;
  const asRuntime = (id: string) =>
    connectNats({ servers: url(), creds: runtimeCreds(id), maxReconnectAttempts: 0, timeout: 3_000 });

  it("a registered runtime connects and reads its tenant's execution history; an unregistered one is refused; after stop none connects", async () => {
    const rt = uniqueName("rt");
    const reg = event("runtime.registered");
    await store.append(runtimeRef(rt), { ...reg, data: { ...reg.data, tenantId: acme } }, { expectedSeq: 0 });
    const exec = execRef(acme, uniqueName("ex"));
    let seq = (await store.append(exec, event("exec.started", { tenantId: acme }), { expectedSeq: 0 })).seq;
    seq = (await store.append(exec, event("exec.step-completed", { tenantId: acme }), { expectedSeq: seq })).seq;

    const nc = await asRuntime(rt);
    try {
      const history = await createEventStore(nc, f.layout, { subjectScopedReads: true }).read(exec);
      expect(history.events.map((e) => e.event.type)).toEqual(["exec.started", "exec.step-completed"]);
      expect(history.events.at(-1)?.seq).toBe(seq);
    } finally {
      await nc.close();
    }
    await expect(asRuntime(uniqueName("rt-unregistered"))).rejects.toThrow(/authoriz|auth/i);

    await responders.stop();
    await expect(asRuntime(rt)).rejects.toThrow();
  });
});
