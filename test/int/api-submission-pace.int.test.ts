import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { TenantId } from "../../contracts/index.ts";
import { runRef } from "../../streams/subjects.ts";
import { apiFixture, auth, validDag, type ApiFixture } from "../support/api-app.ts";
import { event, eventually } from "../support/streams.ts";

// Boundary: the real API (fastify, its run projection) over a real nats-server; the API's clock is
// the test's, so the pace's refill is exact.
const acme = TenantId.parse("acme");

describe("submission pace per tenant (submissionPace)", () => {
  let fx: ApiFixture;
  let now = Date.parse("2026-05-06T07:08:09.000Z");
  beforeAll(async () => {
    fx = await apiFixture(inject("natsUrl"), {
      quota: true,
      clock: { now: () => new Date(now) },
      tenants: [{ tenantId: acme, submissionPace: { queuedRunsAbove: 3, perSecond: 2, burst: 2 } }],
    });
  });
  afterAll(async () => {
    await fx.close();
  });

  it("paces a tenant's submissions only beyond queuedRunsAbove queued runs, per tenant whatever its token, with 429 submission-rate-limited and an exact Retry-After, writing nothing", async () => {
    const submit = (who: "acme" | "acmeBob" | "globex") =>
      fx.app.inject({ method: "POST", url: "/v1/runs", headers: auth(who), payload: { dag: validDag } });
    // 3 below the depth (not paced), then the burst of 2 beyond it
    const taken: { sharedRunId: string; lastSeq: number }[] = [];
    for (let i = 0; i < 5; i++) {
      const r = await submit("acme");
      expect(r.statusCode, r.body).toBe(201);
      taken.push(r.json() as { sharedRunId: string; lastSeq: number });
    }
    const before = await fx.messageCount();
    const over = await submit("acme");
    expect(over.statusCode).toBe(429);
    // 2 tokens taken at t: the next is due at t + 1/perSecond = 500 ms
    expect(over.headers["retry-after"]).toBe("1");
    expect(over.json().error).toMatchObject({
      code: "submission-rate-limited",
      retryable: true,
      details: { queuedRuns: 5, queuedRunsAbove: 3, perSecond: 2, burst: 2, retryAfterMs: 500, retryAfterSeconds: 1 },
    });
    // the pace is the tenant's, not the token's; another tenant is not paced
    expect((await submit("acmeBob")).statusCode).toBe(429);
    expect(await fx.messageCount()).toBe(before);
    expect((await submit("globex")).statusCode).toBe(201);
    // the wait it named: then one more, and the next waits again
    now += 499;
    expect((await submit("acme")).json().error.details.retryAfterMs).toBe(1);
    now += 1;
    const paced = await submit("acme");
    expect(paced.statusCode).toBe(201);
    taken.push(paced.json() as { sharedRunId: string; lastSeq: number });
    expect((await submit("acme")).statusCode).toBe(429);
    // 4 of its 6 runs start: 2 queued, below the depth, and it is not paced (the clock stands still)
    for (const run of taken.slice(0, 4))
      await fx.store.append(runRef(acme, run.sharedRunId), event("run.started", { tenantId: acme }), {
        expectedSeq: run.lastSeq,
      });
    await eventually("the queue below the depth is not paced", async () =>
      (await submit("acme")).statusCode === 201 ? true : undefined,
    );
    // 3 queued again: paced, with the bucket as it was (no token was taken or refilled meanwhile)
    expect((await submit("acme")).json().error).toMatchObject({
      code: "submission-rate-limited",
      details: { queuedRuns: 3, retryAfterMs: 500 },
    });
  });
});
