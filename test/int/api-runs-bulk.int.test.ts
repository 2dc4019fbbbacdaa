import type { Db, MongoClient } from "mongodb";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { readModelClient } from "../../platform/read-model-db.ts";
import { mongoReadModels } from "../../services/api/index.ts";
import { startForensics, type ForensicsService } from "../../services/forensics/index.ts";
import { apiFixture, auth, validDag, type ApiFixture } from "../support/api-app.ts";
import { uniqueName } from "../support/isolation.ts";
import { eventually } from "../support/streams.ts";

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

/**
 * `POST /v1/runs/bulk-cancel` against the real stack underneath it: runs submitted through the API
 * to a real nats-server, selected from the run-list read model the real forensics projector keeps
 * on FerretDB, each cancelled by its own conditional append. (Bulk fork runs end to end in
 * test/host/runtime-fork.host.test.ts: a fork needs ended runs.)
 */
describe("bulk cancel over a filter (POST /v1/runs/bulk-cancel) on NATS and FerretDB", () => {
  let mongo: MongoClient;
  let db: Db;
  let fx: ApiFixture;
  let projector: ForensicsService;
  const ids: string[] = [];
  let other = "";
  const post = async (url: string, payload: unknown, who: "acme" | "globex" | "operator" = "acme") => {
    const res = await fx.app.inject({ method: "POST", url, headers: auth(who), payload: payload as Json });
    return { status: res.statusCode, body: res.json() as Json };
  };
  const cancels = async (id: string, who: "acme" | "globex" = "acme") =>
    ((await fx.app.inject({ url: `/v1/runs/${id}/events`, headers: auth(who) })).json().events as Json[]).filter(
      (e) => e.event.type === "run.cancel-requested",
    );

  beforeAll(async () => {
    mongo = readModelClient(inject("mongoUrl"));
    db = mongo.db(uniqueName("bulk"));
    fx = await apiFixture(inject("natsUrl"), { readModels: mongoReadModels(db) });
    projector = await startForensics({ handle: fx.nc, layout: fx.layout, db });
    for (let i = 0; i < 6; i++) {
      const labels = { batch: "b1", ...(i % 2 === 0 ? { even: "yes" } : {}) };
      ids.push((await post("/v1/runs", { dag: validDag, labels })).body.sharedRunId);
    }
    other = (await post("/v1/runs", { dag: validDag, labels: { batch: "b1", even: "yes" } }, "globex")).body
      .sharedRunId;
    // Both tenants' lists: globex's run is submitted last, so acme's six listed says nothing of it.
    const listed = async (who: "acme" | "globex") =>
      (await fx.app.inject({ url: "/v1/runs?limit=100", headers: auth(who) })).json().runs?.length;
    await eventually("the projector listed every run", async () =>
      (await listed("acme")) === 6 && (await listed("globex")) === 1 ? true : undefined,
    );
  });
  afterAll(async () => {
    await projector?.stop();
    await db?.dropDatabase();
    await mongo?.close();
    await fx?.close();
  });

  it("a dry run names what a filter selects and writes nothing", async () => {
    const before = await fx.messageCount();
    const dry = await post("/v1/runs/bulk-cancel", { filter: { label: ["even=yes"] }, dryRun: true });
    expect(dry.status, JSON.stringify(dry.body)).toBe(200);
    expect(dry.body).toMatchObject({ dryRun: true, matched: 3 });
    expect(dry.body.runs.map((r: Json) => r.sharedRunId).sort()).toEqual([ids[0], ids[2], ids[4]].sort());
    expect(dry.body.next).toBeUndefined();
    expect(await fx.messageCount()).toBe(before);
  });

  it("an empty filter is refused (400) and writes nothing; another tenant's runs are never selected", async () => {
    const before = await fx.messageCount();
    expect((await post("/v1/runs/bulk-cancel", { filter: {} })).status).toBe(400);
    const theirs = await post("/v1/runs/bulk-cancel", { filter: { label: ["batch=b1"] }, dryRun: true }, "globex");
    expect(theirs.body.runs.map((r: Json) => r.sharedRunId)).toEqual([other]);
    expect(await fx.messageCount()).toBe(before);
  });

  it("cancels each selected run once, recorded with the identity that asked; a repeat changes nothing", async () => {
    const first = await post("/v1/runs/bulk-cancel", { filter: { label: ["even=yes"] }, reason: "bad batch" });
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    expect(first.body.runs.map((r: Json) => r.outcome)).toEqual(["requested", "requested", "requested"]);
    for (const id of [ids[0]!, ids[2]!, ids[4]!]) {
      const c = await cancels(id);
      expect(c).toHaveLength(1);
      expect(c[0]!.event.data).toEqual({ by: "tenant:acme", reason: "bad batch" });
    }
    for (const id of [ids[1]!, ids[3]!, ids[5]!]) expect(await cancels(id)).toEqual([]);
    expect(await cancels(other, "globex")).toEqual([]);
    const again = await post("/v1/runs/bulk-cancel", { filter: { label: ["even=yes"] } });
    expect(again.body.runs.map((r: Json) => r.outcome)).toEqual([
      "already-requested",
      "already-requested",
      "already-requested",
    ]);
    expect(await cancels(ids[0]!)).toHaveLength(1);
  });

  it("an operator selects one tenant's runs with ?tenant=, in pages of `limit` continued by `next`, within [since, until)", async () => {
    const none = await post(
      "/v1/runs/bulk-cancel?tenant=acme",
      { filter: { label: ["batch=b1"], until: "2000-01-01T00:00:00Z" }, dryRun: true },
      "operator",
    );
    expect(none.body.matched).toBe(0);
    const p1 = await post(
      "/v1/runs/bulk-cancel?tenant=acme",
      { filter: { label: ["batch=b1"], since: "2000-01-01T00:00:00Z" }, limit: 4, reason: "ops" },
      "operator",
    );
    expect(p1.status, JSON.stringify(p1.body)).toBe(200);
    expect(p1.body.runs).toHaveLength(4);
    expect(p1.body.next).toBeDefined();
    const p2 = await post(
      "/v1/runs/bulk-cancel?tenant=acme",
      { filter: { label: ["batch=b1"] }, limit: 4, cursor: p1.body.next, reason: "ops" },
      "operator",
    );
    expect(p2.body.next).toBeUndefined();
    const all = [...p1.body.runs, ...p2.body.runs];
    expect(all.map((r: Json) => r.sharedRunId).sort()).toEqual([...ids].sort());
    expect(
      all
        .filter((r: Json) => r.outcome === "requested")
        .map((r: Json) => r.sharedRunId)
        .sort(),
    ).toEqual([ids[1], ids[3], ids[5]].sort());
    expect((await cancels(ids[1]!))[0]!.event.data).toEqual({ by: expect.stringMatching(/^operator:/), reason: "ops" });
    expect(await cancels(other, "globex")).toEqual([]);
  });
});
