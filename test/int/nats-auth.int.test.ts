import { jetstream } from "@nats-io/jetstream";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { kickRuntime, kickUntilGone } from "../../platform/nats-auth/kick.ts";
import { KICKER, producerIdentity } from "../../platform/nats-auth/rights.ts";
import { connectNats } from "../../platform/nats-connect.ts";
import { createSnapshotStore, snapshotPrefixOf } from "../../platform/snapshots/store.ts";
import { runtimeRef } from "../../streams/index.ts";
import { uniqueName } from "../support/isolation.ts";
import { attempt, authFixture, type AuthFixture } from "../support/nats-auth-fixture.ts";
import { event } from "../support/streams.ts";

const url = () => inject("natsUrl");

describe("NATS identities against a real nats-server with authentication on (boundary: nats-server authorization + auth callout)", () => {
  let fx: AuthFixture;
  let f: AuthFixture["f"];
  beforeAll(async () => {
    fx = await authFixture(url());
    f = fx.f;
  });
  afterAll(() => fx.close());
  const as = (id: Parameters<AuthFixture["as"]>[0]) => fx.as(id);
  const asRuntime = (id: string) => fx.asRuntime(id);
  const register = (id: string, tenantId: string) => fx.register(id, tenantId);

  it("refuses a connection without credentials, or with an unknown runtime password", async () => {
    await expect(connectNats({ servers: url(), creds: "" })).rejects.toThrow(/Authorization Violation/);
    await expect(
      connectNats({ servers: url(), creds: `${uniqueName("rt")}:not-the-password`, maxReconnectAttempts: 0 }),
    ).rejects.toThrow(/Authorization Violation|timeout/i);
  });

  it("gives each service only its own appends: api submits, only provisioner writes lifecycle, only recovery fences, only setup creates streams", async () => {
    const p = f.layout.eventPrefix;
    const api = await as("api");
    const recovery = await as("recovery");
    const provisioner = fx.provisioner;
    const admission = await as("admission");
    const operator = await as("operator");
    expect(await attempt(api, `${p}.run.acme.r1.submitted`)).toMatch(/^answered/);
    // Admission submits (and cancels) run steps' child runs from the parents' journals.
    expect(await attempt(admission, `${p}.run.acme.r1c.submitted`)).toMatch(/^answered/);
    expect(await attempt(admission, `${p}.run.acme.r1c.cancel-requested`)).toMatch(/^answered/);
    expect(await attempt(admission, `${p}.run.acme.r1.signal-received`)).toBe("refused");
    // Only the api moves a run to a newer worker version (docs/worker-versions.md "Upgrade").
    expect(await attempt(api, `${p}.run.acme.r1.upgraded`)).toMatch(/^answered/);
    for (const nc of [admission, recovery, provisioner, operator])
      expect(await attempt(nc, `${p}.run.acme.r1.upgraded`)).toBe("refused");
    // Only the provisioner records a tenant's deployed worker version; only the api asks for a deploy.
    expect(await attempt(provisioner, `${p}.worker.acme.deploys.deployed`)).toMatch(/^answered/);
    expect(await attempt(api, `${p}.worker.acme.deploys.deploy-requested`)).toMatch(/^answered/);
    for (const nc of [api, admission, recovery, operator])
      expect(await attempt(nc, `${p}.worker.acme.deploys.deployed`)).toBe("refused");
    expect(await attempt(provisioner, `${p}.worker.acme.deploys.deploy-requested`)).toBe("refused");
    expect(await attempt(api, `${p}.runtime.rt-x.fenced`)).toBe("refused");
    expect(await attempt(provisioner, `${p}.runtime.rt-x.fenced`)).toBe("refused");
    expect(await attempt(recovery, `${p}.runtime.rt-x.fenced`)).toMatch(/^answered/);
    expect(await attempt(recovery, `${p}.runtime.rt-x.registered`)).toBe("refused");
    expect(await attempt(provisioner, `${p}.runtime.rt-x.registered`)).toMatch(/^answered/);
    expect(await attempt(operator, `${p}.run.acme.r1.submitted`)).toBe("refused");
    for (const nc of [api, recovery, admission, operator, provisioner])
      expect(await attempt(nc, `$JS.API.STREAM.CREATE.${f.layout.eventStream}`)).toBe("refused");
    expect(
      await attempt(admission, `$JS.API.CONSUMER.DELETE.${f.layout.eventStream}.provisioner-scaleout-requested`),
    ).toBe("refused");
  });

  it("lets a runtime write its own heartbeat and its tenant's journal, and refuses everything else: run.submitted and run.cancel-requested for any tenant (its own too)", async () => {
    const p = f.layout.eventPrefix;
    const rt = uniqueName("rt");
    await register(rt, "acme");
    const nc = await asRuntime(rt);
    expect(await attempt(nc, `${f.layout.heartbeatPrefix}.${rt}`)).toMatch(/^answered/);
    expect(await attempt(nc, `${p}.exec.acme.e1.step-completed`)).toMatch(/^answered/);
    expect(await attempt(nc, `${p}.run.acme.r1.started`)).toMatch(/^answered/);
    // A run step only journals its child run (exec.child-run-submitted); admission submits it.
    expect(await attempt(nc, `${p}.exec.acme.e1.child-run-submitted`)).toMatch(/^answered/);
    const refused = [
      `${p}.run.acme.r1.submitted`,
      `${p}.run.acme.r1.cancel-requested`,
      `${p}.run.acme.r1.upgraded`,
      `${p}.run.globex.r1.submitted`,
      `${p}.run.globex.r1.cancel-requested`,
      `${p}.runtime.${rt}.fenced`,
      `${p}.runtime.${rt}.capacity-published`,
      `${p}.runtime.${rt}.registered`,
      `${f.layout.heartbeatPrefix}.${uniqueName("rt-other")}`,
      `${p}.exec.globex.e1.step-completed`,
      `${p}.exec.acme.e1.paused-for-recovery`,
      `${p}.run.globex.r1.started`,
      `$JS.API.STREAM.CREATE.${f.layout.eventStream}`,
      `$JS.API.STREAM.UPDATE.${f.layout.eventStream}`,
      `$JS.API.STREAM.DELETE.${f.layout.eventStream}`,
      `$JS.API.STREAM.PURGE.${f.layout.heartbeatStream}`,
      `$JS.API.CONSUMER.DURABLE.CREATE.${f.layout.eventStream}.mine`,
      `$JS.API.CONSUMER.CREATE.${f.layout.eventStream}.mine.${p}.run.globex.>`,
      `$JS.API.CONSUMER.DELETE.${f.layout.eventStream}.provisioner-scaleout-requested`,
      `$JS.API.CONSUMER.MSG.NEXT.${f.layout.eventStream}.provisioner-scaleout-requested`,
    ];
    for (const s of refused) expect([s, await attempt(nc, s)]).toEqual([s, "refused"]);
  });

  it("stops a runtime's credentials once it is fenced: refused at connect, and the live connection ends at expiry", async () => {
    const rt = uniqueName("rt");
    await register(rt, "acme");
    const live = await asRuntime(rt);
    const js = jetstream(live);
    await js.publish(`${f.layout.heartbeatPrefix}.${rt}`, "{}");
    const fence = event("runtime.fenced");
    await fx.store.append(runtimeRef(rt), fence, { expectedSeq: await fx.store.lastSeq(runtimeRef(rt)) });
    await expect(asRuntime(rt)).rejects.toThrow(/Authorization Violation|authorization/i);
    // The minted user expires after 2 s; its reconnect asks the callout again, which refuses.
    const closed = await Promise.race([
      live.closed().then(() => "closed"),
      new Promise((r) => setTimeout(() => r("open"), 15_000)),
    ]);
    expect(closed).toBe("closed");
  });

  it("kicks a fenced runtime's live connection at once: it can no longer append within ~1 s, long before its 10-minute expiry", async () => {
    const long = await authFixture(url(), 600_000);
    try {
      const rt = uniqueName("rt");
      await long.register(rt, "acme");
      const live = await long.asRuntime(rt);
      const js = jetstream(live, { timeout: 1_000 });
      const journal = `${long.f.layout.eventPrefix}.exec.acme.${uniqueName("e")}.step-completed`;
      await js.publish(journal, "{}");
      await long.store.append(runtimeRef(rt), event("runtime.fenced"), {
        expectedSeq: await long.store.lastSeq(runtimeRef(rt)),
      });
      // Fenced, but the minted user lives 10 minutes: without a kick the live connection still appends.
      expect((await js.publish(journal, "{}")).seq).toBeGreaterThan(0);
      const kicker = await long.as(KICKER);
      const t0 = Date.now();
      expect(await kickRuntime(kicker, rt)).toBe(1);
      // The reconnect asks the callout, which reads the fence and refuses: the connection closes.
      await Promise.race([live.closed(), new Promise((r) => setTimeout(r, 5_000))]);
      const closedAfterMs = Date.now() - t0;
      expect(live.isClosed()).toBe(true);
      expect(closedAfterMs).toBeLessThan(1_500);
      await expect(js.publish(journal, "{}")).rejects.toThrow();
      // Nothing left to kick; a service connection of the same name is not a runtime's.
      expect(await kickRuntime(kicker, rt)).toBe(0);
    } finally {
      await long.close();
    }
  });

  it("kicks until none remains: a connection authorized just before the fence and registered after the first round's CONNZ survives that round, and a later round kicks it", async () => {
    const long = await authFixture(url(), 600_000);
    try {
      const rt = uniqueName("rt");
      await long.register(rt, "acme");
      const first = await long.asRuntime(rt);
      const journal = `${long.f.layout.eventPrefix}.exec.acme.${uniqueName("e")}.step-completed`;
      const kicker = await long.as(KICKER);
      let late: Awaited<ReturnType<typeof long.asRuntime>> | undefined;
      const r = await kickUntilGone(kicker, rt, {
        afterRound: async (round) => {
          if (round !== 1) return;
          // The race: the callout authorizes a connection (not fenced yet), the fence is appended,
          // and the connection registers after round 1's CONNZ answer. One round would stop here.
          late = await long.asRuntime(rt);
          await long.store.append(runtimeRef(rt), event("runtime.fenced"), {
            expectedSeq: await long.store.lastSeq(runtimeRef(rt)),
          });
          expect((await jetstream(late, { timeout: 1_000 }).publish(journal, "{}")).seq).toBeGreaterThan(0);
        },
      });
      expect(r.remaining).toBe(0);
      expect(r.kicked).toBeGreaterThanOrEqual(2);
      expect(r.rounds).toBeGreaterThanOrEqual(3);
      await Promise.race([Promise.all([first.closed(), late!.closed()]), new Promise((ok) => setTimeout(ok, 5_000))]);
      expect([first.isClosed(), late!.isClosed()]).toEqual([true, true]);
      await expect(jetstream(late!, { timeout: 1_000 }).publish(journal, "{}")).rejects.toThrow();
      expect(await kickRuntime(kicker, rt)).toBe(0);
    } finally {
      await long.close();
    }
  });

  it("gives the kicker (system account) only connection listing and kick: no DROVER subject, no JetStream, no other system request", async () => {
    const kicker = await as(KICKER);
    expect(await attempt(kicker, "$SYS.REQ.SERVER.PING.CONNZ")).toMatch(/^answered/);
    for (const s of [
      "$SYS.REQ.SERVER.PING.VARZ",
      "$SYS.REQ.SERVER.PING.STATZ",
      "$SYS.REQ.ACCOUNT.DROVER.CONNZ",
      "$SYS.REQ.SERVER.PING.JSZ",
      "$SYS.REQ.USER.AUTH",
      "$JS.API.INFO",
      `${f.layout.eventPrefix}.runtime.rt-x.fenced`,
    ])
      expect([s, await attempt(kicker, s)]).toEqual([s, "refused"]);
    // No service of the DROVER account may kick or list connections.
    for (const id of ["recovery", "provisioner", "api"] as const)
      expect(await attempt(await as(id), "$SYS.REQ.SERVER.PING.CONNZ")).toMatch(
        /refused|failed: .*(503|no responders)/i,
      );
  });

  it("lets admission write and read only its own snapshot key: recovery's key and the api are refused (writes)", async () => {
    const admission = await as("admission");
    const api = await as("api");
    const recoveryNc = await as("recovery");
    const own = createSnapshotStore(admission, f.layout, "admission");
    const head = await own.write("admission-run-index/1", 0, new TextEncoder().encode("{}"), new Date());
    const back = await own.read("admission-run-index/1");
    expect(back.found && "body" in back ? new TextDecoder().decode(back.body) : back).toBe("{}");
    expect(head.chunks).toBe(1);
    const snap = snapshotPrefixOf(f.layout);
    expect(await attempt(admission, `${snap}.recovery.head`)).toBe("refused");
    // Writes are scoped here; reads are not on this shared test server, whose tagged scope grants
    // Direct Get on every stream (stream names cannot be partly wildcarded): the production
    // configuration's read scoping is checked in platform/nats-auth/rights.unit.test.ts.
    expect(await attempt(api, `${snap}.admission.head`)).toBe("refused");
    expect(await attempt(recoveryNc, `${snap}.admission.0.0`)).toBe("refused");
    expect(await attempt(recoveryNc, `${snap}.recovery.head`, "{}")).toMatch(/^answered/);
  });

  it("lets the provisioner and the api write and read only their own snapshot keys; capacity, which keeps none, writes none (writes)", async () => {
    const snap = snapshotPrefixOf(f.layout);
    const api = await as("api");
    const capacity = await as("capacity");
    for (const [nc, owner, kind] of [
      [fx.provisioner, "provisioner", "provisioner-roster/2"],
      [api, "api", "api-open-runs/1"],
    ] as const) {
      const own = createSnapshotStore(nc, f.layout, owner);
      await own.write(kind, 0, new TextEncoder().encode(`{"${owner}":1}`), new Date());
      const back = await own.read(kind);
      expect(back.found && "body" in back ? new TextDecoder().decode(back.body) : back).toBe(`{"${owner}":1}`);
    }
    expect(await attempt(fx.provisioner, `${snap}.api.head`)).toBe("refused");
    expect(await attempt(fx.provisioner, `${snap}.admission.a.0`)).toBe("refused");
    expect(await attempt(api, `${snap}.provisioner.head`)).toBe("refused");
    expect(await attempt(api, `${snap}.recovery.b.0`)).toBe("refused");
    for (const key of ["capacity.head", "provisioner.head", "api.head"])
      expect(await attempt(capacity, `${snap}.${key}`)).toBe("refused");
  });

  it("lets no service create a durable consumer, not even with a durable_name in the body of an ordered-consumer create", async () => {
    const st = f.layout.eventStream;
    const p = f.layout.eventPrefix;
    const durable = (name: string, filter = `${p}.>`) =>
      JSON.stringify({
        stream_name: st,
        config: { durable_name: name, filter_subject: filter, ack_policy: "explicit" },
      });
    for (const id of ["admission", "recovery", "api", "operator", "capacity", "forensics"] as const) {
      const nc = await as(id);
      const name = uniqueName("dur").replace(/-/g, "_");
      // The unnamed form is allowed (ordered consumers); nats-server refuses a durable there.
      expect(await attempt(nc, `$JS.API.CONSUMER.CREATE.${st}`, durable(name))).toMatch(
        /^answered: .*"err_code":10020,"description":"consumer expected to be ephemeral but a durable/,
      );
      // The named forms, where a durable_name equal to the name would create one, are not allowed.
      expect(await attempt(nc, `$JS.API.CONSUMER.CREATE.${st}.${name}`, durable(name))).toBe("refused");
      expect(await attempt(nc, `$JS.API.CONSUMER.CREATE.${st}.${name}.${p}.>`, durable(name))).toBe("refused");
      expect(await attempt(nc, `$JS.API.CONSUMER.DURABLE.CREATE.${st}.${name}`, durable(name))).toBe("refused");
      expect(await f.jsm.consumers.info(st, name).catch(() => "absent")).toBe("absent");
    }
    // What the named form does with a durable_name in the body (why services may not use it):
    const name = uniqueName("dur").replace(/-/g, "_");
    const harness = await f.jsm.consumers.add(st, { durable_name: name, name, filter_subject: `${p}.>` });
    expect(harness.config.durable_name).toBe(name);
    await f.jsm.consumers.delete(st, name);
  });

  it("lets a tenant-limited producer submit for its tenant and refuses another tenant", async () => {
    const p = f.layout.eventPrefix;
    const producer = await as(producerIdentity("acme"));
    // Answered by JetStream with a stored sequence: the submission is in the stream.
    expect(await attempt(producer, `${p}.run.acme.r2.submitted`)).toMatch(/^answered: \{"stream":"[^"]+",.*"seq":\d+/);
    expect(await attempt(producer, `${p}.run.globex.r2.submitted`)).toBe("refused");
    expect(await attempt(producer, `${p}.run.acme.r2.dispatched`)).toBe("refused");
  });
});
