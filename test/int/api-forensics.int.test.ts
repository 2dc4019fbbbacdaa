import type { Db, MongoClient } from "mongodb";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { readModelClient } from "../../platform/read-model-db.ts";
import { mongoReadModels } from "../../services/api/index.ts";
import { startForensics, type ForensicsService } from "../../services/forensics/index.ts";
import { apiFixture, auth, type ApiFixture } from "../support/api-app.ts";
import { acmeForensicsId, appendScenario, scenario as s } from "../support/forensics-scenario.ts";
import { uniqueName } from "../support/isolation.ts";

type Row = { tenantId: string; type: string; recovery: boolean; seq: number };

describe("api forensics queries against real FerretDB and a real nats-server", () => {
  let mongo: MongoClient;
  let db: Db;
  let fx: ApiFixture;
  let projector: ForensicsService;
  let last: number;
  beforeAll(async () => {
    mongo = readModelClient(inject("mongoUrl"));
    db = mongo.db(uniqueName("apifx"));
    fx = await apiFixture(inject("natsUrl"), { readModels: mongoReadModels(db) });
    last = await appendScenario(fx.store);
    projector = await startForensics({ handle: fx.nc, layout: fx.layout, db });
    await projector.waitFor(last);
  });
  afterAll(async () => {
    await projector.stop();
    await db.dropDatabase();
    await mongo.close();
    await fx.close();
  });
  const get = (url: string, who: "acme" | "globex" | "operator") => fx.app.inject({ url, headers: auth(who) });

  it("answers a run's causal chain in stream order, submission through failure, fence and recovery to completion", async () => {
    const res = await get(`/v1/runs/${s.acmeRun}/timeline`, "acme");
    expect(res.statusCode).toBe(200);
    const t = res.json();
    expect(t).toMatchObject({
      asOf: last,
      sharedRunId: s.acmeRun,
      tenantId: "acme",
      status: "completed",
      stepCount: 5,
    });
    const seqs = t.chain.map((e: { seq: number }) => e.seq);
    expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
    const firstOf = (phase: string) => t.chain.findIndex((e: { phase: string }) => e.phase === phase);
    const order = [
      "submission",
      "admission",
      "dispatch",
      "execution",
      "steps",
      "failure",
      "fence",
      "recovery",
      "completion",
    ].map(firstOf);
    expect(order.every((i) => i >= 0)).toBe(true);
    expect(order).toEqual([...order].sort((a, b) => a - b));
    expect(t.chain.find((e: { type: string }) => e.type === "run.admitted").detail.candidates).toEqual([
      { runtimeInstanceId: s.runtime, rank: 0, why: "most free slots" },
    ]);
    expect(
      t.chain.filter((e: { phase: string }) => e.phase === "steps").map((e: { summary: string }) => e.summary),
    ).toEqual(["2 steps completed (a, b), 0 failed attempts", "1 step completed (c), 0 failed attempts"]);
    expect(t.executions).toMatchObject([
      { executionId: s.acmeExec, status: "completed", epoch: 1, completedSteps: 3, duplicateCompletions: 0 },
    ]);
    expect(t.incidents).toMatchObject([
      { incidentId: s.incident, runtimeInstanceId: s.runtime, status: "recovery-planned", planned: { itemCount: 1 } },
    ]);
  });

  it("confines every query to the token's tenant: another tenant's run is 404 and a safe tenant has no recovery entry at all", async () => {
    expect((await get(`/v1/runs/${s.acmeRun}/timeline`, "globex")).statusCode).toBe(404);
    expect((await get(`/v1/runs/${s.acmeRun}/timeline?tenant=acme`, "globex")).statusCode).toBe(403);
    const globex = (await get("/v1/ledger", "globex")).json();
    expect(globex.entries.length).toBeGreaterThan(0);
    expect(
      globex.entries.every((r: Row) => r.tenantId === "globex" && !r.recovery && !r.type.startsWith("runtime.")),
    ).toBe(true);
    expect((await get("/v1/ledger?recovery=true", "globex")).json().entries).toEqual([]);
    const safe = (await get(`/v1/forensics?incidentId=${s.incident}`, "globex")).json();
    expect(safe).toMatchObject({ tenantId: "globex", incident: null, entries: [] });
    expect((await get(`/v1/runs/${s.globexRun}/timeline`, "globex")).json().incidents).toEqual([]);
    // Nor can a tenant reach the operator's view of the incident.
    expect((await get(`/v1/incidents/${s.incident}`, "globex")).statusCode).toBe(403);
  });

  it("shows the impacted tenant its whole incident and recovery ledger, and the operator every tenant's view", async () => {
    const mine = (await get(`/v1/forensics?incidentId=${s.incident}`, "acme")).json();
    expect(mine.incident).toMatchObject({
      incidentId: s.incident,
      runtimeInstanceId: s.runtime,
      status: "recovery-planned",
      suspected: { reasonCode: "heartbeat-stale" },
      fenced: { proof: { kind: "process-exit" } },
      items: [{ forensicsId: acmeForensicsId, tenantId: "acme", outcome: "completed" }],
    });
    expect(mine.entries.map((r: Row) => r.type)).toEqual([
      "forensics.execution-recovery-candidate-detected",
      "forensics.shared-run-requeued-for-resume",
      "forensics.execution-recovery-completed",
    ]);
    expect((await get(`/v1/forensics?runId=${s.acmeRun}`, "acme")).json().entries).toEqual(mine.entries);
    const recovery = (await get("/v1/ledger?recovery=true", "acme")).json().entries.map((r: Row) => r.type);
    expect(recovery).toEqual(
      expect.arrayContaining([
        "runtime.recovery-planned",
        "exec.paused-for-recovery",
        "run.requeued-for-resume",
        "exec.resumed",
      ]),
    );
    const ops = (await get(`/v1/incidents/${s.incident}`, "operator")).json();
    expect(ops.incident).toMatchObject({ id: s.incident, tenantIds: ["acme"], items: [{ tenantId: "acme" }] });
    expect(ops.forensics).toEqual(mine.entries);
    expect(
      (await get(`/v1/ledger?tenant=acme&recovery=true`, "operator")).json().entries.map((r: Row) => r.type),
    ).toEqual(recovery);
    expect((await get("/v1/ledger", "operator")).statusCode).toBe(400);
    expect((await get("/v1/incidents/inc-unknown-0001", "operator")).statusCode).toBe(404);
  });

  it("lists the latest incidents to operators only (GET /v1/incidents, the operator page's source)", async () => {
    const res = await get("/v1/incidents?limit=10", "operator");
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({
      asOf: last,
      incidents: [
        {
          id: s.incident,
          incidentId: s.incident,
          runtimeInstanceId: s.runtime,
          status: "recovery-planned",
          tenantIds: ["acme"],
        },
      ],
    });
    expect((await get("/v1/incidents", "acme")).statusCode).toBe(403);
  });

  it("pages the ledger by stream sequence: `next` is the `since` of the following page", async () => {
    const all = (await get("/v1/ledger", "acme")).json().entries as Row[];
    const first = (await get("/v1/ledger?limit=5", "acme")).json();
    expect(first.entries).toEqual(all.slice(0, 5));
    const second = (await get(`/v1/ledger?limit=5000&since=${first.next}`, "acme")).json();
    expect([...first.entries, ...second.entries]).toEqual(all);
    expect(second.next).toBe(all.at(-1)!.seq);
  });

  it("answers 503 read-model-unavailable without MONGO_URL and when MongoDB does not answer, for every forensics query", async () => {
    const down = readModelClient("mongodb://127.0.0.1:1/?directConnection=true&retryWrites=false", {
      serverSelectionTimeoutMS: 200,
    });
    const without = await apiFixture(inject("natsUrl"));
    const unreachable = await apiFixture(inject("natsUrl"), { readModels: mongoReadModels(down.db("nothing")) });
    try {
      for (const app of [without.app, unreachable.app]) {
        for (const url of [
          `/v1/runs/${s.acmeRun}/timeline`,
          "/v1/forensics",
          "/v1/ledger",
          `/v1/incidents/${s.incident}`,
        ]) {
          const res = await app.inject({ url, headers: auth(url.includes("incidents") ? "operator" : "acme") });
          expect([url, res.statusCode, res.json().error.code]).toEqual([url, 503, "read-model-unavailable"]);
        }
      }
    } finally {
      await without.close();
      await unreachable.close();
      await down.close();
    }
  });
});
