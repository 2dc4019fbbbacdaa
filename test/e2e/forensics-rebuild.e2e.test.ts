import { execFile } from "node:child_process";
import { readFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import { type NatsConnection } from "@nats-io/transport-node";
import { connectHarness, serverKeysOf } from "../../platform/nats-auth/server-keys.ts";
import { credentialOf } from "../../platform/nats-auth/credentials.ts";
import type { Db, MongoClient } from "mongodb";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { CHECKPOINT_COLLECTION, runDocId, storedDoc, type StoredDoc } from "../../contracts/read-models.ts";
import { startControlPlane, type ControlPlane } from "../../platform/control-plane-processes.ts";
import { readModelClient, readModelDbName } from "../../platform/read-model-db.ts";
import { createEventStore } from "../../streams/index.ts";
import { acmeForensicsId, appendScenario, scenario as s } from "../support/forensics-scenario.ts";
import { dumpReadModels } from "../support/read-model-dump.ts";
import { eventually } from "../support/streams.ts";

/**
 * `drover admin forensics-rebuild` as a real process against the real forensics service process,
 * real nats-server and FerretDB: the CLI's NATS request makes the service drop read models that
 * were corrupted under it (a record deleted, one rewritten, a phantom run, a whole collection
 * dropped: nothing its watchdog notices) and rebuild them from stream sequence 1; every document
 * comes back equal to what the projector had built.
 */
const ROOT = resolve(import.meta.dirname, "../..");
const CP = "cp-fx-rebuild";

describe("drover admin forensics-rebuild → forensics service over NATS (real processes, real nats-server and FerretDB)", () => {
  let cp: ControlPlane, nc: NatsConnection, mongo: MongoClient, db: Db;

  beforeAll(async () => {
    cp = await startControlPlane({
      natsUrl: inject("natsUrl"),
      redisUrl: inject("redisUrl"),
      mongoUrl: inject("mongoUrl"),
      services: ["forensics"],
      config: { controlPlaneId: CP, tenants: [{ tenantId: "acme", isolationMode: "shared" }] },
    });
    nc = await connectHarness({ servers: inject("natsUrl") });
    mongo = readModelClient(inject("mongoUrl"));
    db = mongo.db(readModelDbName(cp.env, CP));
    await eventually(
      "the forensics service answering rebuild requests",
      async () =>
        (await readFile(join(cp.logDir, "forensics.log"), "utf8").catch(() => "")).includes(
          "forensics projector running",
        )
          ? true
          : undefined,
      60_000,
    );
  }, 120_000);
  afterAll(async () => {
    await nc?.close();
    await cp?.stop();
    await db?.dropDatabase().catch(() => undefined);
    await mongo?.close();
  });

  function drover(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
    // The CLI connects as the read-only operator identity, which may send rebuild requests.
    const env = {
      ...process.env,
      NATS_URL: "nats://127.0.0.1:1",
      NATS_CREDS: credentialOf(serverKeysOf(inject("natsUrl"))!, "operator"),
      DROVER_STREAM_TAG: cp.streamTag,
    };
    return new Promise((ok) => {
      execFile(
        process.execPath,
        ["--import", "tsx", "cli/drover.ts", ...args],
        { cwd: ROOT, env, timeout: 120_000 },
        (err, stdout, stderr) => ok({ code: err ? Number((err as { code?: number }).code ?? -1) : 0, stdout, stderr }),
      );
    });
  }

  it("restores corrupted read models to exactly what the projector had built, and prints the position reached", async () => {
    const last = await appendScenario(createEventStore(nc, cp.layout));
    await eventually(
      "the projector at the scenario's last sequence",
      async () => {
        const c = await db
          .collection<{ _id: string; seq: number }>(CHECKPOINT_COLLECTION)
          .findOne({ _id: "forensics" });
        return (c?.seq ?? 0) >= last ? true : undefined;
      },
      30_000,
    );
    const before = await dumpReadModels(db);
    expect(before.forensics!.length).toBeGreaterThan(0);
    expect(before.incidents!.map((d) => (d as { _id: string })._id)).toEqual([s.incident]);

    // Corrupt: the incident rewritten, a phantom run, the acme run's document gone, the forensics rows dropped.
    await db
      .collection<{ _id: string }>("incidents")
      .updateOne({ _id: s.incident }, { $set: { status: "suspected", tenantIds: [] } });
    await db
      .collection<StoredDoc>("runs")
      .insertOne(storedDoc({ _id: "acme:run-phantom", tenantId: "acme", lastSeq: 1 }));
    expect(
      (await db.collection<StoredDoc>("runs").deleteMany({ key: runDocId("acme", s.acmeRun) })).deletedCount,
    ).toBeGreaterThan(0);
    await db.collection("forensics").drop();
    const corrupted = await dumpReadModels(db);
    expect(corrupted).not.toEqual(before);
    expect(corrupted.forensics).toEqual([]);

    // NATS from --nats (NATS_URL points nowhere), the control plane by flag; the admin path of the CLI.
    const r = await drover(["admin", "forensics-rebuild", "--nats", inject("natsUrl"), "--control-plane", CP]);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(
      new RegExp(`^read models of ${CP} rebuilt from stream sequence 1 up to ${last} in \\d+ ms\n$`),
    );
    const after = await dumpReadModels(db);
    expect(after).toEqual(before);
    expect(after.forensics!.some((d) => (d as { forensicsId?: string }).forensicsId === acmeForensicsId)).toBe(true);

    const json = await drover([
      "admin",
      "forensics-rebuild",
      "--nats",
      inject("natsUrl"),
      "--control-plane",
      CP,
      "--json",
    ]);
    expect(json.code).toBe(0);
    expect(JSON.parse(json.stdout)).toMatchObject({ controlPlaneId: CP, position: last });
    expect(await dumpReadModels(db)).toEqual(before);
  });

  it("exits 3 with a clear error when no forensics service answers for that control plane", async () => {
    const r = await drover([
      "admin",
      "forensics-rebuild",
      "--nats",
      inject("natsUrl"),
      "--control-plane",
      "cp-nobody",
      "--timeout-ms",
      "2000",
    ]);
    expect(r.code).toBe(3);
    expect(r.stdout).toBe("");
    expect(r.stderr).toContain("no forensics service answered on");
  });
});
