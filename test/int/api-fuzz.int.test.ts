import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import type { MongoClient } from "mongodb";
import { readModelClient } from "../../platform/read-model-db.ts";
import { mongoReadModels } from "../../services/api/index.ts";
import { apiFixture, TOKENS, validDag, type ApiFixture } from "../support/api-app.ts";
import { uniqueName } from "../support/isolation.ts";

// Bounded: enough shapes to reach every route's refusals, small enough for a shared 2-core machine.
const RUNS = 250;

const token = fc.oneof(
  fc.constant(undefined),
  fc.constantFrom(...Object.values(TOKENS)).map((t) => `Bearer ${t}`),
  fc.constantFrom("Bearer", "Basic abc", "Bearer __proto__", `bearer ${TOKENS.acme} x`),
  fc.string({ maxLength: 40 }).map((s) => `Bearer ${s.replace(/[\r\n]/g, "")}`),
);
const segment = fc
  .oneof(fc.constantFrom("run-1", "RUN", "a.b", "*", ">", "..", "%00", "x".repeat(64)), fc.string({ maxLength: 70 }))
  .map((s) => encodeURIComponent(s));
const query = fc.oneof(
  fc.constant(""),
  segment.map((t) => `?tenant=${t}`),
  fc.constantFrom("?tenant=acme", "?tenant=globex&tenant=acme", "?x=1", "?tenant="),
);
// `/v1/events` with a well-formed request is a live stream that never ends, so the fuzz only
// sends it with a Last-Event-ID that must be refused (see lastEventId below).
const path = fc.oneof(
  fc.constant("/v1/runs"),
  segment.map((id) => `/v1/runs/${id}`),
  segment.map((id) => `/v1/runs/${id}/events`),
  fc.constantFrom("/v1/events", "/v1/runtimes", "/v1/capacity", "/v1", "/", "/v2/runs", "/v1/runs/"),
);
const dagish = fc.oneof(
  fc.constant(validDag),
  fc.record({
    steps: fc.array(
      fc.record(
        {
          id: fc.string({ maxLength: 8 }),
          kind: fc.constantFrom("compute", "sleep", "llm", "nope"),
          dependsOn: fc.array(fc.constantFrom("a", "b", "c"), { maxLength: 3 }),
          params: fc.anything(),
        },
        { requiredKeys: ["id", "kind"] },
      ),
      { maxLength: 4 },
    ),
  }),
  fc.jsonValue(),
);
const body = fc.oneof(
  fc
    .record(
      {
        dag: dagish,
        idempotencyKey: fc.option(fc.string({ maxLength: 210 }), { nil: undefined }),
        labels: fc.option(
          fc.dictionary(fc.string({ maxLength: 70 }), fc.oneof(fc.string({ maxLength: 10 }), fc.integer())),
          { nil: undefined },
        ),
      },
      { requiredKeys: ["dag"] },
    )
    .map((b) => JSON.stringify(b)),
  fc.jsonValue().map((v) => JSON.stringify(v)),
  fc.string({ maxLength: 200 }),
  fc.constantFrom(
    "",
    "{",
    "null",
    '{"__proto__":{"x":1},"dag":{}}',
    `{"dag":${JSON.stringify(validDag)},"tenantId":"globex"}`,
  ),
);
const lastEventId = fc.oneof(
  fc.constantFrom("-1", "1.5", "abc", "1e3", " 7", "9".repeat(16)),
  fc.string({ minLength: 1, maxLength: 20 }).filter((s) => !/^\d{1,15}$/.test(s)),
);
const wild = fc.record({
  method: fc.constantFrom("GET", "POST", "PUT", "DELETE", "PATCH", "HEAD"),
  path,
  query,
  token,
  body,
  lastEventId,
  contentType: fc.constantFrom(
    undefined,
    "application/json",
    "text/plain",
    "application/json; charset=utf-8",
    "multipart/form-data",
  ),
});
// Submissions by a tenant with only the body varying: reaches the DAG rules and the happy path.
const submission = fc.record({
  method: fc.constant("POST"),
  path: fc.constant("/v1/runs"),
  query: fc.constant(""),
  token: fc.constantFrom(TOKENS.acme, TOKENS.globex).map((t) => `Bearer ${t}`),
  // A valid body one time in four: the random bodies alone reached 201 only ~4 times in 250 cases,
  // and none at all in about one run in ten, which made the happy-path check below a coin toss.
  body: fc.oneof(
    { arbitrary: body, weight: 3 },
    { arbitrary: fc.constant(JSON.stringify({ dag: validDag, labels: { team: "ml" } })), weight: 1 },
  ),
  lastEventId,
  contentType: fc.constant("application/json"),
});
const request = fc.oneof({ arbitrary: wild, weight: 3 }, { arbitrary: submission, weight: 2 });

describe("api bad-input fuzz against a real nats-server", () => {
  let fx: ApiFixture, mongo: MongoClient;
  const dbName = uniqueName("fuzz");
  beforeAll(async () => {
    // The API as deployed: with its read models (an empty database on the real FerretDB), so the
    // routes that read them (GET /v1/runs) are fuzzed too, not answered "not configured".
    mongo = readModelClient(inject("mongoUrl"));
    fx = await apiFixture(inject("natsUrl"), { readModels: mongoReadModels(mongo.db(dbName)) });
  });
  afterAll(async () => {
    await fx.close();
    await mongo.db(dbName).dropDatabase();
    await mongo.close();
  });

  it("never answers 500 and never appends an event for a request it refuses, over random methods, paths, tokens, headers and bodies", async () => {
    let created = 0;
    await fc.assert(
      fc.asyncProperty(request, async (r) => {
        const before = await fx.messageCount();
        const headers: Record<string, string> = { "last-event-id": r.lastEventId.replace(/[\r\n]/g, "") };
        if (r.token !== undefined) headers.authorization = r.token;
        if (r.contentType !== undefined) headers["content-type"] = r.contentType;
        const withBody = r.method !== "GET" && r.method !== "HEAD";
        const res = await fx.app.inject({
          method: r.method,
          url: `${r.path}${r.query}`,
          headers,
          ...(withBody ? { payload: r.body } : {}),
        });
        expect(res.statusCode, `${r.method} ${r.path}${r.query}: ${res.body}`).toBeLessThan(500);
        const after = await fx.messageCount();
        if (res.statusCode === 201) {
          created += 1;
          expect(after).toBe(before + 1);
        } else expect(after, `${r.method} ${r.path} answered ${res.statusCode} but wrote`).toBe(before);
        if (res.statusCode >= 400 && r.method !== "HEAD" && r.path !== "/")
          expect(res.json().error.code).toMatch(/^[a-z-]+$/);
      }),
      { numRuns: RUNS },
    );
    // The generators must also reach the happy path, or "never writes when refusing" proves little.
    expect(created).toBeGreaterThan(0);
  });
});
