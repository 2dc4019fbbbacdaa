import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { TenantId } from "../../contracts/index.ts";
import { natsSignalFeeds } from "../../services/runtime/index.ts";
import { createEventStore, runRef } from "../../streams/index.ts";
import { connectNats } from "../../platform/nats-connect.ts";
import { uniqueName } from "../support/isolation.ts";
import { authFixture, type AuthFixture } from "../support/nats-auth-fixture.ts";
import { event, eventually } from "../support/streams.ts";

const acme = TenantId.parse("acme");
const api = { service: "api", instanceId: "api-1" } as const;

describe("a runtime's signal feed (boundary: real nats-server authorization, a runtime's minted credentials)", () => {
  let fx: AuthFixture;
  beforeAll(async () => {
    fx = await authFixture(inject("natsUrl"), 60_000);
  });
  afterAll(() => fx.close());

  it("delivers a signal stored after the watch to the wait of its run and name only, read back with its sequence, and refuses another tenant's feed", async () => {
    const rt = uniqueName("rt");
    await fx.register(rt, "acme");
    const nc = await fx.asRuntime(rt);
    // As the runtime does: its store reads through the history responder (no consumer right).
    const store = createEventStore(nc, fx.f.layout, { subjectScopedReads: true });
    const feeds = natsSignalFeeds(nc, fx.f.layout, store, () => undefined);
    const run = runRef(acme, uniqueName("run"));
    const other = runRef(acme, uniqueName("run"));
    const approval = await feeds.watch("acme", run.id, "approval");
    const otherName = await feeds.watch("acme", run.id, "review");
    const seen: string[] = [];
    void otherName.found.then(() => seen.push("review"));
    // Another run's signal, a signal of this run not written by the API, then the API's signal.
    await fx.store.append(other, event("run.signal-received", { tenantId: acme, writer: api }), { expectedSeq: 0 });
    const forged = event("run.signal-received", { tenantId: acme, writer: { service: "test", instanceId: "t" } });
    const forgedSeq = (await fx.store.append(run, forged, { expectedSeq: 0 })).seq;
    // A signal whose conditional publish the stream refuses reaches the subscription but is never
    // stored: it resolves nothing (the feed reads the run back before resolving a wait).
    const refused = event("run.signal-received", { tenantId: acme, writer: api });
    await expect(fx.store.append(run, refused, { expectedSeq: 0 })).rejects.toThrow(/expected|conflict|moved/i);
    const real = event("run.signal-received", { tenantId: acme, writer: api });
    const seq = (await fx.store.append(run, real, { expectedSeq: forgedSeq })).seq;
    const found = await approval.found;
    expect([found.seq, found.event.eventId, found.event.writer.service]).toEqual([seq, real.eventId, "api"]);
    expect(seen).toEqual([]);
    approval.close();
    otherName.close();
    await expect(feeds.watch("globex", uniqueName("run"), "approval")).rejects.toThrow(/permission/i);
  });

  it("after a reconnect reads every listening run once: a signal stored while the runtime was disconnected (its hint lost) still resolves the wait", async () => {
    const rt = uniqueName("rt");
    await fx.register(rt, "acme");
    // Its own connection, slow to come back (4 s), so the signal is stored while it is away: one
    // append, but on a loaded machine it has taken more than the 1.5 s this waited before.
    const nc = await connectNats({ servers: inject("natsUrl"), creds: fx.runtimeCreds(rt), reconnectTimeWait: 4_000 });
    try {
      const store = createEventStore(nc, fx.f.layout, { subjectScopedReads: true });
      const feeds = natsSignalFeeds(nc, fx.f.layout, store, () => undefined);
      const run = runRef(acme, uniqueName("run"));
      const w = await feeds.watch("acme", run.id, "approval");
      const statuses: string[] = [];
      const disconnected = new Promise<void>((ok) => {
        void (async () => {
          for await (const st of nc.status()) {
            statuses.push(st.type);
            if (st.type === "disconnect") ok();
          }
        })();
      });
      void nc.reconnect();
      await disconnected;
      const real = event("run.signal-received", { tenantId: acme, writer: api });
      const seq = (await fx.store.append(run, real, { expectedSeq: 0 })).seq;
      statuses.push("stored");
      const found = await w.found;
      expect([found.seq, found.event.eventId]).toEqual([seq, real.eventId]);
      // The signal was stored before the connection came back: only the reconnect's read found it.
      expect(statuses.indexOf("stored")).toBeLessThan(statuses.indexOf("reconnect"));
      w.close();
    } finally {
      await nc.close();
    }
  });

  it("a hint whose reads nobody answers (the history responder gone: a provisioner restart) is read again until one is answered: the signal stored meanwhile still resolves the wait", async () => {
    const rt = uniqueName("rt");
    await fx.register(rt, "acme");
    const nc = await fx.asRuntime(rt);
    const store = createEventStore(nc, fx.f.layout, { subjectScopedReads: true });
    const failures: string[] = [];
    const log = (l: Record<string, unknown>) =>
      void (l.event === "signal-read-failed" && failures.push(String(l.detail)));
    const feeds = natsSignalFeeds(nc, fx.f.layout, store, log, [200]);
    const run = runRef(acme, uniqueName("run"));
    const w = await feeds.watch("acme", run.id, "approval");
    try {
      await fx.history.stop();
      const real = event("run.signal-received", { tenantId: acme, writer: api });
      const seq = (await fx.store.append(run, real, { expectedSeq: 0 })).seq;
      // Every read the hint once made went unanswered (before: four, ~17 s, and the signal was lost).
      await eventually(
        "five unanswered reads of the hinted run",
        async () => (failures.length >= 5 ? true : undefined),
        45_000,
      );
      expect(failures.every((f) => /no history responder answered/.test(f))).toBe(true);
      fx.history.start();
      const found = await Promise.race([
        w.found,
        new Promise<never>((_, fail) => setTimeout(() => fail(new Error("the wait never got its signal")), 15_000)),
      ]);
      expect([found.seq, found.event.eventId]).toEqual([seq, real.eventId]);
    } finally {
      fx.history.start();
      w.close();
    }
  }, 120_000);
});
