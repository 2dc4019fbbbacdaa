import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { TenantId } from "../../contracts/index.ts";
import { createEventStore, execRef, runRef, type EventStore } from "../../streams/index.ts";
import { uniqueName } from "../support/isolation.ts";
import { attempt, authFixture, type AuthFixture } from "../support/nats-auth-fixture.ts";
import { event } from "../support/streams.ts";

const url = () => inject("natsUrl");
const acme = TenantId.parse("acme");
const globex = TenantId.parse("globex");

describe("a runtime reads only its tenants' events, by every JetStream read route (boundary: real nats-server authorization)", () => {
  let fx: AuthFixture;
  let p: string;
  let stream: string;
  /** Stream sequence of a globex exec event a runtime of acme must not read. */
  let foreignSeq: number;
  const acmeExec = execRef(acme, uniqueName("ex"));
  const globexExec = execRef(globex, uniqueName("ex"));
  const globexRun = runRef(globex, uniqueName("run"));

  beforeAll(async () => {
    fx = await authFixture(url(), 60_000);
    p = fx.f.layout.eventPrefix;
    stream = fx.f.layout.eventStream;
    await fx.store.append(acmeExec, event("exec.started", { tenantId: acme }), { expectedSeq: 0 });
    foreignSeq = (await fx.store.append(globexExec, event("exec.started", { tenantId: globex }), { expectedSeq: 0 }))
      .seq;
    await fx.store.append(globexRun, event("run.submitted", { tenantId: globex }), { expectedSeq: 0 });
  });
  afterAll(() => fx.close());

  const acmeRuntime = async () => {
    const rt = uniqueName("rt");
    await fx.register(rt, "acme");
    return fx.asRuntime(rt);
  };

  it("refuses another tenant's events by direct get by sequence, next_by_subj, leader get, subject-form get and consumer create", async () => {
    const nc = await acmeRuntime();
    const g = `${p}.exec.globex.${globexExec.id}.>`;
    const refused: [string, string][] = [
      [`$JS.API.DIRECT.GET.${stream}`, JSON.stringify({ seq: foreignSeq })],
      [`$JS.API.DIRECT.GET.${stream}`, JSON.stringify({ seq: 1, next_by_subj: g })],
      [`$JS.API.DIRECT.GET.${stream}`, JSON.stringify({ seq: 1, next_by_subj: `${p}.exec.acme.>` })],
      [`$JS.API.DIRECT.GET.${stream}`, JSON.stringify({ seq: 1, batch: 10, next_by_subj: g })],
      [`$JS.API.STREAM.MSG.GET.${stream}`, JSON.stringify({ seq: foreignSeq })],
      [`$JS.API.STREAM.MSG.GET.${stream}`, JSON.stringify({ last_by_subj: g })],
      [`$JS.API.DIRECT.GET.${stream}.${g}`, ""],
      [`$JS.API.DIRECT.GET.${stream}.${p}.run.globex.${globexRun.id}.submitted`, ""],
      [`$JS.API.DIRECT.GET.${stream}.${p}.>`, ""],
      [`$JS.API.CONSUMER.CREATE.${stream}`, JSON.stringify({ stream_name: stream, config: { filter_subject: g } })],
      [
        `$JS.API.CONSUMER.CREATE.${stream}.oc.${g}`,
        JSON.stringify({ stream_name: stream, config: { filter_subject: g } }),
      ],
      [`$JS.API.CONSUMER.CREATE.${stream}.oc`, JSON.stringify({ stream_name: stream, config: { filter_subject: g } })],
      [`$JS.API.CONSUMER.CREATE.${stream}.oc.${p}.>`, JSON.stringify({ stream_name: stream, config: {} })],
      [`$JS.API.CONSUMER.LIST.${stream}`, "{}"],
    ];
    for (const [s, body] of refused) expect([s, await attempt(nc, s, body)]).toEqual([s, "refused"]);
  });

  it("answers its own subject-form gets, but never with a body that names another sequence or filter", async () => {
    const nc = await acmeRuntime();
    const own = `${p}.exec.acme.${acmeExec.id}.>`;
    const g = `${p}.exec.globex.${globexExec.id}.>`;
    // The subject-form get of its own tenant answers, with the last message of the (wildcard) filter.
    expect(await attempt(nc, `$JS.API.DIRECT.GET.${stream}.${own}`, "")).toMatch(/^answered: .*exec\.started/);
    // A body naming a sequence, a filter or a batch there is a bad request, not another tenant's message.
    for (const body of [{ seq: foreignSeq }, { next_by_subj: g }, { last_by_subj: g }, { seq: 1, batch: 5 }]) {
      const r = await attempt(nc, `$JS.API.DIRECT.GET.${stream}.${own}`, JSON.stringify(body));
      expect([body, r]).toEqual([body, expect.stringMatching(/^answered: status 408/)]);
      expect(r).not.toContain("globex");
    }
    // No consumer at all, even one whose subject names its own filter (test/int/nats-runtime-history.int.test.ts).
    const r = await attempt(
      nc,
      `$JS.API.CONSUMER.CREATE.${stream}.${uniqueName("oc")}.${own}`,
      JSON.stringify({ stream_name: stream, config: { filter_subject: own, ack_policy: "none", mem_storage: true } }),
    );
    expect(r).toBe("refused");
  });

  it("reads and appends its own tenant's aggregates through a subject-scoped event store (the history responder), and a body-filtered store is refused", async () => {
    const nc = await acmeRuntime();
    const scoped: EventStore = createEventStore(nc, fx.f.layout, { subjectScopedReads: true });
    const before = await scoped.read(acmeExec);
    expect(before.events.map((e) => e.event.type)).toEqual(["exec.started"]);
    expect(await scoped.read(execRef(acme, uniqueName("none")))).toEqual({ events: [], lastSeq: 0 });
    const next = event("exec.step-completed", { tenantId: acme });
    const a = await scoped.append(acmeExec, next, { expectedSeq: before.lastSeq });
    // A retry of the same append (its first attempt landed) is recognised by a scoped read.
    expect(await scoped.append(acmeExec, next, { expectedSeq: before.lastSeq })).toEqual({
      seq: a.seq,
      duplicate: true,
    });
    expect(await scoped.lastSeq(acmeExec)).toBe(a.seq);
    // The last event of one type, by the subject-form Direct Get of its own subject (checkDispatched's read).
    expect(await scoped.lastOfType(acmeExec, "exec.step-completed")).toMatchObject({
      seq: a.seq,
      event: { eventId: next.eventId },
    });
    expect(await scoped.lastOfType(acmeExec, "exec.completed")).toBeUndefined();
    await expect(scoped.lastOfType(globexExec, "exec.started")).rejects.toThrow(/permission/i);
    const after = await scoped.read(acmeExec);
    expect(after.events.map((e) => e.seq)).toEqual([before.lastSeq, a.seq]);
    await expect(scoped.read(globexExec)).rejects.toThrow(/permission/i);
    // The default store's batched get is refused by the server; the client's batch iterator does not
    // surface the permission error, so the read fails as unanswered (the request itself is refused above).
    await expect(createEventStore(nc, fx.f.layout, { timeoutMs: 1500 }).read(acmeExec)).rejects.toThrow(
      /permission|did not answer/i,
    );
  });
});
