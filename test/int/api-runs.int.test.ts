import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { ExecutionId, SharedRunId, TenantId } from "../../contracts/index.ts";
import { jetstream } from "@nats-io/jetstream";
import { eventSubject, execRef, runRef, runtimeRef, heartbeatSubject } from "../../streams/subjects.ts";
import { apiFixture, auth, validDag, type ApiFixture } from "../support/api-app.ts";
import { event } from "../support/streams.ts";

const acme = TenantId.parse("acme");

describe("api runs against a real nats-server", () => {
  let fx: ApiFixture;
  beforeAll(async () => {
    fx = await apiFixture(inject("natsUrl"));
  });
  afterAll(async () => {
    await fx.close();
  });

  const submit = (body: unknown, who: "acme" | "globex" | "operator" = "acme") =>
    fx.app.inject({ method: "POST", url: "/v1/runs", headers: auth(who), payload: body as object });

  it("appends one run.submitted with the token's tenant and source api, and serves the folded run", async () => {
    const res = await submit({ dag: validDag, labels: { team: "ml" } });
    expect(res.statusCode).toBe(201);
    const run = res.json();
    expect(run).toMatchObject({ tenantId: "acme", status: "submitted", placement: null });
    expect(res.headers.location).toBe(`/v1/runs/${run.sharedRunId}`);
    const stored = await fx.store.read(runRef(acme, run.sharedRunId));
    expect(stored.events.map((e) => e.event)).toMatchObject([
      { type: "run.submitted", tenantId: "acme", data: { source: "api", labels: { team: "ml" } } },
    ]);
    const got = await fx.app.inject({ url: `/v1/runs/${run.sharedRunId}`, headers: auth("acme") });
    expect(got.statusCode).toBe(200);
    expect(got.json()).toMatchObject({
      sharedRunId: run.sharedRunId,
      status: "submitted",
      submittedSeq: stored.lastSeq,
      dag: { name: "t" },
    });
  });

  it("creates exactly the distinct runs from 50 concurrent submissions over 10 idempotency keys, one event each", async () => {
    const before = await fx.messageCount();
    const keys = Array.from({ length: 50 }, (_, i) => `order-${i % 10}`);
    const answers = await Promise.all(keys.map((idempotencyKey) => submit({ dag: validDag, idempotencyKey })));
    const runOf = new Map<string, Set<string>>();
    answers.forEach((r, i) => runOf.set(keys[i]!, (runOf.get(keys[i]!) ?? new Set()).add(r.json().sharedRunId)));
    expect([...runOf.values()].every((ids) => ids.size === 1)).toBe(true);
    expect(new Set(answers.map((r) => r.json().sharedRunId)).size).toBe(10);
    expect(answers.filter((r) => r.statusCode === 201)).toHaveLength(10);
    expect(answers.filter((r) => r.statusCode === 200)).toHaveLength(40);
    expect(await fx.messageCount()).toBe(before + 10);
    // A later retry still converges; the same key from another tenant is another run.
    const again = await submit({ dag: validDag, idempotencyKey: "order-3" });
    expect([again.statusCode, again.json().sharedRunId]).toEqual([200, [...runOf.get("order-3")!][0]]);
    const other = await submit({ dag: validDag, idempotencyKey: "order-3" }, "globex");
    expect(other.statusCode).toBe(201);
    expect(other.json().sharedRunId).not.toBe(again.json().sharedRunId);
  });

  it("refuses invalid DAGs of every kind with 400 dag-invalid and writes nothing", async () => {
    const before = await fx.messageCount();
    const dags = [
      {
        steps: [
          { id: "a", kind: "compute", dependsOn: ["b"] },
          { id: "b", kind: "compute", dependsOn: ["a"] },
        ],
      },
      { steps: [{ id: "a", kind: "teleport" }] },
      {
        steps: [
          { id: "a", kind: "compute" },
          { id: "a", kind: "compute" },
        ],
      },
      { steps: [{ id: "a", kind: "compute", dependsOn: ["ghost"] }] },
      { steps: [] },
      { steps: [{ id: "Not.Safe", kind: "compute" }] },
      { steps: [{ id: "a", kind: "http", params: { url: "file:///etc/passwd" } }] },
    ];
    for (const dag of dags) {
      const res = await submit({ dag, idempotencyKey: "bad-dag" });
      expect(res.statusCode, JSON.stringify(dag)).toBe(400);
      expect(res.json().error).toMatchObject({ code: "dag-invalid", retryable: false });
      expect(res.json().error.details.issues.length).toBeGreaterThan(0);
    }
    expect(await fx.messageCount()).toBe(before);
  });

  it("refuses a body naming its own tenant or unknown fields as contract-violation: the tenant comes only from the token", async () => {
    const before = await fx.messageCount();
    for (const body of [{ dag: validDag, tenantId: "globex" }, { dag: [] }, {}, { dag: validDag, labels: { k: 5 } }]) {
      const res = await submit(body);
      expect(res.statusCode, JSON.stringify(body)).toBe(400);
      expect(res.json().error.code).toBe("contract-violation");
    }
    expect(await fx.messageCount()).toBe(before);
  });

  it("answers 401 unauthenticated for a missing or unknown token and 403 for an operator submitting a run", async () => {
    const missing = await fx.app.inject({ method: "POST", url: "/v1/runs", payload: { dag: validDag } });
    expect(missing.statusCode).toBe(401);
    expect(missing.headers["www-authenticate"]).toBe("Bearer");
    expect(missing.json().error.code).toBe("unauthenticated");
    const unknown = await fx.app.inject({
      url: "/v1/runs/run-x",
      headers: { authorization: "Bearer not-a-configured-token-00" },
    });
    expect(unknown.statusCode).toBe(401);
    expect((await submit({ dag: validDag }, "operator")).json().error.code).toBe("forbidden");
    // The dashboard itself needs no token and carries none: the user types it.
    const page = await fx.app.inject({ url: "/" });
    expect([page.statusCode, page.headers["content-type"]]).toEqual([200, "text/html; charset=utf-8"]);
    expect(page.body).not.toMatch(/token-[a-z]+-0/);
  });

  it("never shows tenant globex acme's run or its events: 404, not 403, and names nothing", async () => {
    const run = (await submit({ dag: validDag })).json();
    for (const url of [`/v1/runs/${run.sharedRunId}`, `/v1/runs/${run.sharedRunId}/events`]) {
      const res = await fx.app.inject({ url, headers: auth("globex") });
      expect(res.statusCode, url).toBe(404);
      expect(res.json().error.code).toBe("not-found");
      expect(JSON.stringify(res.json())).not.toContain("acme");
    }
    expect(
      (await fx.app.inject({ url: `/v1/runs/${run.sharedRunId}?tenant=acme`, headers: auth("globex") })).statusCode,
    ).toBe(403);
    expect(
      (await fx.app.inject({ url: `/v1/runs/${run.sharedRunId}?tenant=acme`, headers: auth("operator") })).statusCode,
    ).toBe(200);
    expect((await fx.app.inject({ url: "/v1/runs/Not.An.Id", headers: auth("acme") })).json().error.code).toBe(
      "invalid-id",
    );
  });

  it("shows a trusted producer's undecodable submission as submitted, then rejected with the reason; another tenant still gets 404, a corrupt later event 500", async () => {
    const js = jetstream(fx.nc);
    const id = SharedRunId.parse("run-producer-garbage-1");
    const ref = runRef(acme, id);
    const subject = (type: "run.submitted" | "run.started") => eventSubject(fx.layout, ref, type);
    const bad = await js.publish(subject("run.submitted"), '{"type":"run.submitted","data":{"dag":"not a dag"}}');
    const url = `/v1/runs/${id}`;
    const before = await fx.app.inject({ url, headers: auth("acme") });
    expect(before.statusCode).toBe(200);
    expect(before.json()).toMatchObject({
      sharedRunId: id,
      tenantId: "acme",
      status: "submitted",
      submittedSeq: bad.seq,
      lastSeq: bad.seq,
      dag: null,
    });
    // What admission appends for it (test/int/admission.int.test.ts proves admission does).
    const rejected = await fx.store.append(
      ref,
      event("run.rejected", {
        tenantId: acme,
        data: { reason: { code: "contract-violation", detail: "dag: expected object" } },
      }),
      { expectedSeq: bad.seq },
    );
    const after = await fx.app.inject({ url, headers: auth("acme") });
    expect(after.json()).toMatchObject({
      status: "rejected",
      lastReason: "contract-violation",
      submittedSeq: bad.seq,
      lastSeq: rejected.seq,
    });
    const events = await fx.app.inject({ url: `${url}/events`, headers: auth("acme") });
    expect(events.statusCode).toBe(200);
    expect(
      events
        .json()
        .events.map((e: { seq: number; event: { type: string; data: unknown } }) => [
          e.seq,
          e.event.type,
          e.event.data,
        ]),
    ).toEqual([
      [rejected.seq, "run.rejected", { reason: { code: "contract-violation", detail: "dag: expected object" } }],
    ]);
    expect((await fx.app.inject({ url, headers: auth("globex") })).statusCode).toBe(404);
    // Any other undecodable message is left out of the fold and listed, never a 500.
    const garbage = await js.publish(subject("run.started"), "{}");
    const corrupt = await fx.app.inject({ url, headers: auth("acme") });
    expect(corrupt.statusCode).toBe(200);
    expect(corrupt.json()).toMatchObject({ status: "rejected", submittedSeq: bad.seq });
    expect(corrupt.json().unreadableEvents.map((u: { seq: number; subject: string }) => [u.seq, u.subject])).toEqual([
      [bad.seq, subject("run.submitted")],
      [garbage.seq, subject("run.started")],
    ]);
    const corruptEvents = await fx.app.inject({ url: `${url}/events`, headers: auth("acme") });
    expect(corruptEvents.statusCode).toBe(200);
    expect(corruptEvents.json().unreadableEvents.map((u: { seq: number }) => u.seq)).toEqual([bad.seq, garbage.seq]);
  });

  it("a run with garbage after its events still reads (undecodable messages listed, not folded), and cancels past them", async () => {
    const js = jetstream(fx.nc);
    const run = (await submit({ dag: validDag })).json();
    const ref = runRef(acme, SharedRunId.parse(run.sharedRunId));
    const url = `/v1/runs/${run.sharedRunId}`;
    const junk = [
      await js.publish(eventSubject(fx.layout, ref, "run.dispatched"), "not json"),
      await js.publish(eventSubject(fx.layout, ref, "run.started"), JSON.stringify({ type: "run.from-the-future" })),
    ];
    const detail = await fx.app.inject({ url, headers: auth("acme") });
    expect(detail.statusCode).toBe(200);
    expect(detail.json()).toMatchObject({ status: "submitted", lastSeq: run.lastSeq });
    expect(detail.json().unreadableEvents.map((u: { seq: number }) => u.seq)).toEqual(junk.map((j) => j.seq));
    expect(detail.json().unreadableEvents[0].error).toContain("not JSON");
    // The cancel's append expects the aggregate's true last sequence (the garbage's), so it lands first time.
    const cancel = await fx.app.inject({ method: "POST", url: `${url}/cancel`, headers: auth("acme"), payload: {} });
    expect(cancel.statusCode, cancel.body).toBeLessThan(300);
    expect(cancel.json().outcome).toBe("requested");
  });

  it("lists a run's events and its execution's events in stream order", async () => {
    const run = (await submit({ dag: validDag })).json();
    const ref = runRef(acme, run.sharedRunId);
    const executionId = ExecutionId.parse(`ex-${run.sharedRunId.slice(4, 20)}`);
    const sharedRunId = SharedRunId.parse(run.sharedRunId);
    // Placed first: the run fold takes run.started only from the runtime the run is placed on.
    const a1 = await fx.store.append(ref, event("run.admitted", { tenantId: acme }), { expectedSeq: run.lastSeq });
    const s1 = await fx.store.append(
      ref,
      event("run.started", { tenantId: acme, data: { ...event("run.started").data, executionId } }),
      { expectedSeq: a1.seq },
    );
    const e1 = await fx.store.append(
      execRef(acme, executionId),
      event("exec.started", { tenantId: acme, data: { ...event("exec.started").data, sharedRunId } }),
      { expectedSeq: 0 },
    );
    await fx.store.append(execRef(acme, ExecutionId.parse("ex-unrelated")), event("exec.started", { tenantId: acme }), {
      expectedSeq: 0,
    });
    const e2 = await fx.store.append(execRef(acme, executionId), event("exec.completed", { tenantId: acme }), {
      expectedSeq: e1.seq,
    });
    const res = await fx.app.inject({ url: `/v1/runs/${run.sharedRunId}/events`, headers: auth("acme") });
    expect(res.statusCode).toBe(200);
    expect(res.json().events.map((e: { seq: number; event: { type: string } }) => [e.seq, e.event.type])).toEqual([
      [run.lastSeq, "run.submitted"],
      [a1.seq, "run.admitted"],
      [s1.seq, "run.started"],
      [e1.seq, "exec.started"],
      [e2.seq, "exec.completed"],
    ]);
    expect((await fx.app.inject({ url: `/v1/runs/${run.sharedRunId}`, headers: auth("acme") })).json()).toMatchObject({
      status: "started",
      executionId,
    });
  });

  it("serves runtimes and capacity to operators only, folded from runtime events and the last heartbeat", async () => {
    const rt = "rt-acme-0001";
    const ref = runtimeRef(rt);
    let seq = 0;
    for (const type of ["runtime.registered", "runtime.host-started", "runtime.endpoint-published"] as const) {
      const base = event(type);
      const data = type === "runtime.host-started" ? { ...base.data, hostIncarnation: "pid:4242:987654" } : base.data;
      seq = (await fx.store.append(ref, { ...base, data } as typeof base, { expectedSeq: seq })).seq;
    }
    const beat = {
      type: "heartbeat",
      runtimeInstanceId: rt,
      hostIncarnation: "pid:4242:987654",
      beat: 3,
      at: "2026-05-06T07:08:08.000Z",
      workers: 2,
      activeWorkers: 0,
      availableWorkers: 2,
      queuedRuns: 0,
      runningRuns: 0,
      availableSlots: 10,
      paused: false,
      draining: false,
    };
    await fx.nc.request(heartbeatSubject(fx.layout, rt), JSON.stringify(beat));
    for (const url of ["/v1/runtimes", "/v1/capacity"])
      expect((await fx.app.inject({ url, headers: auth("acme") })).statusCode, url).toBe(403);
    const runtimes = (await fx.app.inject({ url: "/v1/runtimes", headers: auth("operator") })).json().runtimes;
    expect(runtimes).toMatchObject([
      { runtimeInstanceId: rt, status: "registered", endpoint: "http://127.0.0.1:41234", heartbeat: { beat: 3 } },
    ]);
    const capacity = (await fx.app.inject({ url: "/v1/capacity", headers: auth("operator") })).json();
    expect(capacity).toMatchObject({
      reservationsIncluded: false,
      accepting: 0,
      runtimes: [{ runtimeInstanceId: rt, canAcceptRun: false, availableSlots: 10 }],
    });
    expect(capacity.runtimes[0].reasons).toContain("status-registered");
    // The reader keeps its fold between calls: later events show up, concurrent calls agree.
    await fx.store.append(ref, event("runtime.draining"), { expectedSeq: seq });
    const again = await Promise.all(
      [1, 2].map(async () => (await fx.app.inject({ url: "/v1/runtimes", headers: auth("operator") })).json().runtimes),
    );
    for (const rows of again)
      expect(rows).toMatchObject([{ runtimeInstanceId: rt, status: "draining", heartbeat: { beat: 3 } }]);
  });
});

describe("api submission quota against a real nats-server", () => {
  let fx: ApiFixture;
  beforeAll(async () => {
    fx = await apiFixture(inject("natsUrl"), {
      quota: true,
      tenants: [{ tenantId: acme, maxConcurrentRuns: 1, overQuota: "reject" }],
    });
  });
  afterAll(async () => {
    await fx.close();
  });

  it("refuses a submission over overQuota=reject with 429 tenant-quota-exceeded, answers retries, and frees the slot on a terminal event", async () => {
    const submit = (key: string) =>
      fx.app.inject({
        method: "POST",
        url: "/v1/runs",
        headers: auth("acme"),
        payload: { dag: validDag, idempotencyKey: key },
      });
    const first = await submit("q-1");
    expect(first.statusCode).toBe(201);
    const before = await fx.messageCount();
    const over = await submit("q-2");
    expect(over.statusCode).toBe(429);
    expect(over.json().error).toMatchObject({
      code: "tenant-quota-exceeded",
      retryable: true,
      details: { openRuns: 1, maxConcurrentRuns: 1 },
    });
    expect(await fx.messageCount()).toBe(before);
    expect((await submit("q-1")).statusCode).toBe(200);
    // globex has no quota configured here (defaults: queue), so acme's limit is not its limit.
    expect(
      (await fx.app.inject({ method: "POST", url: "/v1/runs", headers: auth("globex"), payload: { dag: validDag } }))
        .statusCode,
    ).toBe(201);
    const run = first.json();
    await fx.store.append(runRef(acme, run.sharedRunId), event("run.rejected", { tenantId: acme }), {
      expectedSeq: run.lastSeq,
    });
    expect((await submit("q-2")).statusCode).toBe(201);
  });
});
