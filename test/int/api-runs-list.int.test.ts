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
 * `GET /v1/runs` against the real stack underneath it: runs submitted through the API to a real
 * nats-server, folded by the real forensics projector into FerretDB, listed from that read model.
 */
describe("run list (GET /v1/runs) from the run-list read model on FerretDB", () => {
  let mongo: MongoClient;
  let db: Db;
  let fx: ApiFixture;
  let projector: ForensicsService;
  const ids: string[] = [];
  const get = async (url: string, who: "acme" | "globex" | "operator" = "acme") => {
    const res = await fx.app.inject({ url, headers: auth(who) });
    return { status: res.statusCode, body: res.json() as Json };
  };
  beforeAll(async () => {
    mongo = readModelClient(inject("mongoUrl"));
    db = mongo.db(uniqueName("runlist"));
    fx = await apiFixture(inject("natsUrl"), { readModels: mongoReadModels(db) });
    projector = await startForensics({ handle: fx.nc, layout: fx.layout, db });
    for (let i = 0; i < 7; i++) {
      const labels = { batch: "b1", n: String(i), ...(i % 2 === 0 ? { even: "yes" } : {}) };
      const res = await fx.app.inject({
        method: "POST",
        url: "/v1/runs",
        headers: auth("acme"),
        payload: { dag: validDag, labels },
      });
      ids.push(res.json().sharedRunId);
    }
    await fx.app.inject({ method: "POST", url: "/v1/runs", headers: auth("globex"), payload: { dag: validDag } });
    await eventually("the projector listed every run", async () =>
      (await get("/v1/runs?limit=100")).body.runs?.length === 7 ? true : undefined,
    );
  });
  afterAll(async () => {
    await projector?.stop();
    await db?.dropDatabase();
    await mongo?.close();
    await fx?.close();
  });

  it("answers newest first, pages with an explicit next that is absent on the last page", async () => {
    const newest = [...ids].reverse();
    const pages: string[][] = [];
    let cursor: string | undefined;
    do {
      const p = await get(`/v1/runs?limit=3${cursor ? `&cursor=${cursor}` : ""}`);
      expect(p.status).toBe(200);
      pages.push(p.body.runs.map((r: Json) => r.sharedRunId));
      cursor = p.body.next;
      expect(p.body.asOf).toBeGreaterThan(0);
    } while (cursor !== undefined);
    expect(pages).toEqual([newest.slice(0, 3), newest.slice(3, 6), newest.slice(6)]);
    const first = (await get("/v1/runs?limit=1")).body.runs[0];
    expect(first).toMatchObject({ sharedRunId: ids[6], status: "submitted", stepCount: 2, dagName: "t" });
    expect(first.labels).toEqual({ batch: "b1", n: "6", even: "yes" });
  });

  it("filters by status and by one or several labels (ANDed), and paginates the filtered list", async () => {
    expect((await get("/v1/runs?label=n=3")).body.runs.map((r: Json) => r.sharedRunId)).toEqual([ids[3]]);
    expect((await get("/v1/runs?label=even=yes&label=n=4")).body.runs.map((r: Json) => r.sharedRunId)).toEqual([
      ids[4],
    ]);
    expect((await get("/v1/runs?status=submitted,queued&label=even=yes")).body.runs).toHaveLength(4);
    expect((await get("/v1/runs?status=completed")).body.runs).toEqual([]);
    const p1 = await get("/v1/runs?label=even=yes&limit=2");
    expect(p1.body.runs.map((r: Json) => r.sharedRunId)).toEqual([ids[6], ids[4]]);
    const p2 = await get(`/v1/runs?label=even=yes&limit=2&cursor=${p1.body.next}`);
    expect(p2.body.runs.map((r: Json) => r.sharedRunId)).toEqual([ids[2], ids[0]]);
  });

  it("confines the list to the token's tenant; an operator names the tenant", async () => {
    expect((await get("/v1/runs")).body.runs.every((r: Json) => ids.includes(r.sharedRunId))).toBe(true);
    expect((await get("/v1/runs", "globex")).body.runs).toHaveLength(1);
    expect((await get("/v1/runs?tenant=acme", "globex")).status).toBe(403);
    expect((await get("/v1/runs?tenant=acme&limit=2", "operator")).body.runs.map((r: Json) => r.sharedRunId)).toEqual([
      ids[6],
      ids[5],
    ]);
    expect((await get("/v1/runs?cursor=abc")).status).toBe(400);
  });

  it("links a rerun both ways: the new run names the original, the original lists the rerun", async () => {
    const res = await fx.app.inject({ method: "POST", url: `/v1/runs/${ids[1]}/rerun`, headers: auth("acme") });
    expect(res.statusCode).toBe(201);
    const rerun = res.json().sharedRunId as string;
    const detail = (await get(`/v1/runs/${rerun}`)).body;
    expect(detail).toMatchObject({ rerunOf: ids[1], labels: { batch: "b1", n: "1" } });
    // The projector writes the original's document and the rerun's list page in one batch, the
    // documents first: wait for both, not for the first alone.
    const listed = await eventually("the original lists its rerun, and the rerun is listed", async () => {
      const l = (await get("/v1/runs?label=n=1")).body.runs as Json[];
      const linked = l.find((r) => r.sharedRunId === ids[1])?.reruns.includes(rerun);
      return linked && l.some((r) => r.sharedRunId === rerun) ? l : undefined;
    });
    expect(listed.map((r) => [r.sharedRunId, r.rerunOf])).toEqual([
      [rerun, ids[1]],
      [ids[1], null],
    ]);
    expect(
      (await fx.app.inject({ method: "POST", url: `/v1/runs/${ids[1]}/rerun`, headers: auth("globex") })).statusCode,
    ).toBe(404);
  });
});
