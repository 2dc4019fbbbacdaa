import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { isDroverError, TenantId, type DroverError } from "../../contracts/index.ts";
import { connectHarness } from "../../platform/nats-auth/server-keys.ts";
import {
  createEventStore,
  execRef,
  historyPrefixOf,
  runRef,
  startHistoryResponder,
  type EventStore,
} from "../../streams/index.ts";
import { uniqueName } from "../support/isolation.ts";
import { attempt, authFixture, type AuthFixture } from "../support/nats-auth-fixture.ts";
import { event, freshStreams } from "../support/streams.ts";

const url = () => inject("natsUrl");
const acme = TenantId.parse("acme");
const globex = TenantId.parse("globex");
/** The responder's page budget here: a few events per page, so a history takes many pages. */
const PAGE_BYTES = 4096;

describe("a runtime reads histories through the provisioner's history responder and may create no consumer (boundary: real nats-server authorization, a runtime's minted credentials)", () => {
  let fx: AuthFixture;
  let p: string;
  let stream: string;
  let read: string;
  const acmeExec = execRef(acme, uniqueName("ex"));
  const globexExec = execRef(globex, uniqueName("ex"));
  let acmeSeqs: number[] = [];

  beforeAll(async () => {
    fx = await authFixture(url(), 60_000, { maxPageBytes: PAGE_BYTES });
    p = fx.f.layout.eventPrefix;
    stream = fx.f.layout.eventStream;
    read = historyPrefixOf(fx.f.layout);
    let seq = (await fx.store.append(acmeExec, event("exec.started", { tenantId: acme }), { expectedSeq: 0 })).seq;
    acmeSeqs = [seq];
    await fx.store.append(globexExec, event("exec.started", { tenantId: globex }), { expectedSeq: 0 });
    for (let i = 0; i < 40; i++) {
      seq = (await fx.store.append(acmeExec, event("exec.step-completed", { tenantId: acme }), { expectedSeq: seq }))
        .seq;
      acmeSeqs.push(seq);
    }
  });
  afterAll(() => fx.close());

  const acmeRuntime = async (): Promise<NatsConnection> => {
    const rt = uniqueName("rt");
    await fx.register(rt, "acme");
    return fx.asRuntime(rt);
  };

  it("is refused every consumer create on the event stream, ordered and durable, even over its own tenant's subjects", async () => {
    const nc = await acmeRuntime();
    const own = `${p}.exec.acme.${acmeExec.id}.>`;
    const cfg = (extra: object) =>
      JSON.stringify({ stream_name: stream, config: { filter_subject: own, ack_policy: "none", ...extra } });
    const name = uniqueName("dur").replace(/-/g, "_");
    const refused: [string, string][] = [
      // Ordered (ephemeral) consumers: named with the filter in the subject (what it held before), unnamed.
      [`$JS.API.CONSUMER.CREATE.${stream}.${uniqueName("oc")}.${own}`, cfg({ mem_storage: true })],
      [`$JS.API.CONSUMER.CREATE.${stream}`, cfg({ mem_storage: true })],
      // Durables: by the durable create, and by a named create with durable_name in the body.
      [`$JS.API.CONSUMER.DURABLE.CREATE.${stream}.${name}`, cfg({ durable_name: name })],
      [`$JS.API.CONSUMER.CREATE.${stream}.${name}.${own}`, cfg({ durable_name: name })],
      [`$JS.API.CONSUMER.CREATE.${stream}.${name}`, cfg({ durable_name: name })],
      // Nor anything else of consumer management.
      [`$JS.API.CONSUMER.MSG.NEXT.${stream}.${name}`, "{}"],
      [`$JS.API.CONSUMER.DELETE.${stream}.${name}`, ""],
      [`$JS.API.CONSUMER.INFO.${stream}.${name}`, ""],
      [`$JS.API.CONSUMER.LIST.${stream}`, "{}"],
    ];
    for (const [s, body] of refused) expect([s, await attempt(nc, s, body)]).toEqual([s, "refused"]);
    // The clients' own calls are refused the same way.
    await expect(
      jetstream(nc)
        .consumers.get(stream, { filter_subjects: own })
        .then((c) => c.info()),
    ).rejects.toThrow(/permission/i);
    const jsm = await jetstreamManager(nc, { checkAPI: false });
    await expect(jsm.consumers.add(stream, { durable_name: name, filter_subject: own })).rejects.toThrow(/permission/i);
    expect(await fx.f.jsm.consumers.info(stream, name).catch(() => "none")).toBe("none");
  });

  it("reads its own execution's whole history, page by page, and appends after it", async () => {
    const nc = await acmeRuntime();
    const harness = await connectHarness({ servers: url() });
    const requests: string[] = [];
    const watcher = harness.subscribe(`${read}.>`, { callback: (_, m) => void requests.push(m.subject) });
    await harness.flush();
    try {
      const scoped: EventStore = createEventStore(nc, fx.f.layout, { subjectScopedReads: true });
      const h = await scoped.read(acmeExec);
      expect(h.events.map((e) => e.seq)).toEqual(acmeSeqs);
      expect(h.events.map((e) => e.event)).toEqual((await fx.store.read(acmeExec)).events.map((e) => e.event));
      // Many pages of one aggregate, each request on the subject naming it.
      expect(new Set(requests)).toEqual(new Set([`${read}.exec.acme.${acmeExec.id}`]));
      expect(requests.length).toBeGreaterThan(3);
      const a = await scoped.append(acmeExec, event("exec.step-completed", { tenantId: acme }), {
        expectedSeq: h.lastSeq,
      });
      expect(await scoped.lastSeq(acmeExec)).toBe(a.seq);
      acmeSeqs.push(a.seq);
      expect(await scoped.read(execRef(acme, uniqueName("none")))).toEqual({ events: [], lastSeq: 0 });
    } finally {
      watcher.unsubscribe();
      await harness.close();
    }
  });

  it("is refused another tenant's history, and the responder reads only the aggregate the subject names", async () => {
    const nc = await acmeRuntime();
    const scoped = createEventStore(nc, fx.f.layout, { subjectScopedReads: true });
    await expect(scoped.read(globexExec)).rejects.toThrow(/permission/i);
    await expect(scoped.read(runRef(globex, uniqueName("run")))).rejects.toThrow(/permission/i);
    const body = JSON.stringify({ from: 1 });
    expect(await attempt(nc, `${read}.exec.globex.${globexExec.id}`, body)).toBe("refused");
    expect(await attempt(nc, `${read}.exec.acme.${acmeExec.id}.more`, body)).toBe("refused");
    expect(await attempt(nc, `${read}.forensics.acme.${acmeExec.id}`, body)).toBe("refused");
    // A body naming another filter or subject is not read: the answer holds its own aggregate only.
    const sneaky = JSON.stringify({ from: 1, filter: `${p}.exec.globex.>`, next_by_subj: `${p}.>` });
    const answer = await nc.request(`${read}.exec.acme.${acmeExec.id}`, sneaky, { timeout: 2000 });
    const text = new TextDecoder().decode(answer.data);
    expect(text).toContain(`${p}.exec.acme.${acmeExec.id}.started`);
    expect(text).not.toContain("globex");
    // A malformed request is refused by the responder, not read.
    const bad = await nc.request(`${read}.exec.acme.${acmeExec.id}`, JSON.stringify({ from: 0 }), { timeout: 2000 });
    expect(new TextDecoder().decode(bad.data)).toContain('"bad-request"');
  });
});

describe("a subject-scoped read that cannot be answered (boundary: real nats-server, the harness identity)", () => {
  it("fails at once, not retried, when a message does not fit one page of the responder", async () => {
    const f = await freshStreams(url(), "bighist");
    try {
      // A 1100-byte page leaves 76 bytes after the responder's 1 KiB of slack: no event fits.
      startHistoryResponder(f.nc, f.jsm, f.layout, { maxPageBytes: 1100 });
      const store = createEventStore(f.nc, f.layout, { subjectScopedReads: true });
      const ref = execRef(acme, uniqueName("ex"));
      await store.append(ref, event("exec.started", { tenantId: acme }), { expectedSeq: 0 });
      // Counted requests, not elapsed time (a loaded machine's one request may take a second).
      let requests = 0;
      const watcher = f.nc.subscribe(`${historyPrefixOf(f.layout)}.>`, { callback: () => void requests++ });
      await f.nc.flush();
      const err = await store.read(ref).catch((e: unknown) => e);
      expect(isDroverError(err, "event-store-unavailable")).toBe(true);
      expect((err as DroverError).retryable).toBe(false);
      expect((err as Error).message).toMatch(/does not fit one page/);
      await f.nc.flush();
      watcher.unsubscribe();
      expect(requests).toBe(1);
    } finally {
      await f.close();
    }
  });

  it("fails with event-store-unavailable naming the subject after its bounded retries", async () => {
    const f = await freshStreams(url(), "nohist");
    try {
      const store = createEventStore(f.nc, f.layout, { subjectScopedReads: true, timeoutMs: 1000 });
      const ref = execRef(acme, uniqueName("ex"));
      await store.append(ref, event("exec.started", { tenantId: acme }), { expectedSeq: 0 });
      const t0 = Date.now();
      const err = await store.read(ref).catch((e: unknown) => e);
      const ms = Date.now() - t0;
      expect(isDroverError(err, "event-store-unavailable")).toBe(true);
      expect((err as Error).message).toMatch(
        new RegExp(`no history responder answered ${historyPrefixOf(f.layout).replace(/\./g, "\\.")}\\.exec\\.acme\\.`),
      );
      expect((err as { details: { attempts: number } }).details.attempts).toBe(5);
      // 200 + 500 + 1000 + 2000 ms apart, each "no responders" answered at once.
      expect(ms).toBeGreaterThanOrEqual(3700);
      expect(ms).toBeLessThan(8000);
    } finally {
      await f.close();
    }
  });
});
