import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { TenantId } from "../../contracts/index.ts";
import { runRef } from "../../streams/subjects.ts";
import { apiFixture, auth, validDag, type ApiFixture } from "../support/api-app.ts";
import { event } from "../support/streams.ts";

// Boundary: the real API (fastify, @fastify/rate-limit, its run projection) over a real nats-server;
// feeds are real SSE connections to a listening server.
const acme = TenantId.parse("acme");

describe("queued-run cap per tenant (maxQueuedRuns)", () => {
  let fx: ApiFixture;
  beforeAll(async () => {
    fx = await apiFixture(inject("natsUrl"), { quota: true, tenants: [{ tenantId: acme, maxQueuedRuns: 2 }] });
  });
  afterAll(async () => {
    await fx.close();
  });

  it("refuses a submission beyond maxQueuedRuns with 429 tenant-queue-full and Retry-After, writes nothing, and takes one again once a queued run starts", async () => {
    const submit = (who: "acme" | "globex", key: string) =>
      fx.app.inject({
        method: "POST",
        url: "/v1/runs",
        headers: auth(who),
        payload: { dag: validDag, idempotencyKey: key },
      });
    const first = await submit("acme", "k-1");
    expect(first.statusCode).toBe(201);
    expect((await submit("acme", "k-2")).statusCode).toBe(201);
    const before = await fx.messageCount();
    const over = await submit("acme", "k-3");
    expect(over.statusCode).toBe(429);
    expect(Number(over.headers["retry-after"])).toBeGreaterThanOrEqual(1);
    expect(over.json().error).toMatchObject({
      code: "tenant-queue-full",
      retryable: true,
      details: { queuedRuns: 2, maxQueuedRuns: 2 },
    });
    expect(await fx.messageCount()).toBe(before);
    // A repeat of a queued run's key is answered, not counted; another tenant has its own queue.
    expect((await submit("acme", "k-1")).statusCode).toBe(200);
    expect((await submit("globex", "g-1")).statusCode).toBe(201);
    // The first run starts: it leaves the queue, and the tenant may queue one more.
    const run = first.json();
    await fx.store.append(runRef(acme, run.sharedRunId), event("run.started", { tenantId: acme }), {
      expectedSeq: run.lastSeq,
    });
    expect((await submit("acme", "k-3")).statusCode).toBe(201);
    expect((await submit("acme", "k-4")).statusCode).toBe(429);
  });
});

describe("queued-run cap under concurrent submissions", () => {
  let fx: ApiFixture;
  beforeAll(async () => {
    fx = await apiFixture(inject("natsUrl"), { quota: true, tenants: [{ tenantId: acme, maxQueuedRuns: 40 }] });
  });
  afterAll(async () => {
    await fx.close();
  });

  it("takes exactly maxQueuedRuns of 100 concurrent submissions: far from the cap without waiting for the log, near it caught up", async () => {
    const before = await fx.messageCount();
    const answers = await Promise.all(
      Array.from({ length: 100 }, () =>
        fx.app.inject({ method: "POST", url: "/v1/runs", headers: auth("acme"), payload: { dag: validDag } }),
      ),
    );
    const codes = answers.map((a) => a.statusCode);
    expect(codes.filter((c) => c === 201)).toHaveLength(40);
    expect(codes.filter((c) => c === 429)).toHaveLength(60);
    expect(await fx.messageCount()).toBe(before + 40);
    // Once everything is folded, the cap still holds for a late one.
    const late = await fx.app.inject({
      method: "POST",
      url: "/v1/runs",
      headers: auth("acme"),
      payload: { dag: validDag },
    });
    expect(late.json().error).toMatchObject({
      code: "tenant-queue-full",
      details: { queuedRuns: 40, maxQueuedRuns: 40 },
    });
  });
});

describe("per-credential rate limit", () => {
  let fx: ApiFixture;
  beforeAll(async () => {
    fx = await apiFixture(inject("natsUrl"), { api: { rateLimit: { max: 5, timeWindowMs: 60_000 } } });
  });
  afterAll(async () => {
    await fx.close();
  });

  it("answers the request over the limit with 429 rate-limited and Retry-After; other credentials and /healthz are not affected", async () => {
    // A read of a run that does not exist: 404 until the limit, whatever the answer, every request counts.
    const list = (who: "acme" | "globex") =>
      fx.app.inject({ method: "GET", url: "/v1/runs/run-none", headers: auth(who) });
    for (let i = 0; i < 5; i++) expect((await list("acme")).statusCode).toBe(404);
    const over = await list("acme");
    expect(over.statusCode).toBe(429);
    expect(over.json().error).toMatchObject({ code: "rate-limited", retryable: true });
    const after = Number(over.headers["retry-after"]);
    expect(after).toBeGreaterThanOrEqual(1);
    expect(after).toBeLessThanOrEqual(60);
    expect((await list("globex")).statusCode).toBe(404);
    expect((await fx.app.inject({ method: "GET", url: "/healthz" })).statusCode).toBe(200);
    // An unknown token is refused by authentication, before the limit counts anything.
    const bad = await fx.app.inject({
      method: "GET",
      url: "/v1/runs",
      headers: { authorization: "Bearer nope-nope-nope-nope" },
    });
    expect(bad.statusCode).toBe(401);
  });
});

describe("concurrent event feeds per credential", () => {
  let fx: ApiFixture;
  let base: string;
  const open: AbortController[] = [];
  beforeAll(async () => {
    fx = await apiFixture(inject("natsUrl"), { api: { maxEventFeedsPerCredential: 2 } });
    await fx.app.listen({ host: "127.0.0.1", port: 0 });
    const a = fx.app.server.address();
    base = `http://127.0.0.1:${typeof a === "object" && a ? a.port : 0}`;
  });
  afterAll(async () => {
    for (const c of open) c.abort();
    await fx.close();
  });

  const feed = async (who: "acme" | "globex") => {
    const c = new AbortController();
    open.push(c);
    const res = await fetch(`${base}/v1/events`, { headers: auth(who), signal: c.signal });
    return { res, close: () => c.abort() };
  };

  it("refuses a third live feed of one credential with 429 too-many-event-feeds, and frees the slot when a feed closes", async () => {
    const a1 = await feed("acme");
    const a2 = await feed("acme");
    expect([a1.res.status, a2.res.status]).toEqual([200, 200]);
    const a3 = await feed("acme");
    expect(a3.res.status).toBe(429);
    expect(Number(a3.res.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    expect(((await a3.res.json()) as { error: { code: string } }).error.code).toBe("too-many-event-feeds");
    // Another credential has its own slots.
    const g = await feed("globex");
    expect(g.res.status).toBe(200);
    // Closing one feed gives its slot back (the server sees the socket close: wait for it with a deadline).
    a1.close();
    const deadline = Date.now() + 10_000;
    for (;;) {
      const again = await feed("acme");
      if (again.res.status === 200) break;
      expect(again.res.status).toBe(429);
      if (Date.now() > deadline) throw new Error("the closed feed's slot was not given back within 10 s");
      await new Promise((r) => setTimeout(r, 50));
    }
  });
});
