import { execFile } from "node:child_process";
import { readFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import { jetstream } from "@nats-io/jetstream";
import { type NatsConnection } from "@nats-io/transport-node";
import { credentialOf } from "../../platform/nats-auth/credentials.ts";
import { connectHarness, serverKeysOf } from "../../platform/nats-auth/server-keys.ts";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import type { CapacityDescriptor } from "../../aggregates/capacity/descriptor.ts";
import { redisCapacityView, type CapacityViewStore } from "../../platform/capacity-view.ts";
import { createEventStore, runtimeRef } from "../../streams/index.ts";
import { startControlPlane, type ControlPlane } from "../../platform/control-plane-processes.ts";
import { FAKE_INCARNATION, publishBeat, publishReadyRuntime } from "../support/fake-runtime-capacity.ts";
import { eventually } from "../support/streams.ts";

/**
 * `drover capacity-rebuild` as a real process against the real capacity service process, real
 * nats-server and Redis: the CLI's NATS request makes the service drop a corrupted Redis view and
 * rebuild it from stream sequence 1, and the CLI prints the facts of the rebuilt view.
 */
const ROOT = resolve(import.meta.dirname, "../..");
const CP = "cp-cap-rebuild";
const RT = "rt-cap-rebuild-a";
const DB = 13;

describe("drover capacity-rebuild → capacity service over NATS (real processes, real nats-server and Redis)", () => {
  let cp: ControlPlane, nc: NatsConnection, redis: Redis, view: CapacityViewStore<CapacityDescriptor>;

  beforeAll(async () => {
    redis = new Redis(inject("redisUrl"), { db: DB, maxRetriesPerRequest: 1 });
    await redis.flushdb();
    view = redisCapacityView<CapacityDescriptor>(redis, CP);
    cp = await startControlPlane({
      natsUrl: inject("natsUrl"),
      redisUrl: `${inject("redisUrl")}/${DB}`,
      services: ["capacity"],
      config: { controlPlaneId: CP, tenants: [{ tenantId: "t-cap", isolationMode: "dedicated" }] },
    });
    nc = await connectHarness({ servers: inject("natsUrl") });
    // The service logs this only once the server has its subscription: no request races its start-up.
    await eventually(
      "the capacity service answering rebuild requests",
      async () =>
        (await readFile(join(cp.logDir, "capacity.log"), "utf8").catch(() => "")).includes(
          "answering capacity rebuild requests",
        )
          ? true
          : undefined,
      60_000,
    );
  });
  afterAll(async () => {
    await nc?.close();
    redis?.disconnect();
    await cp?.stop();
  });

  function drover(
    args: string[],
    env: Record<string, string> = {},
  ): Promise<{ code: number; stdout: string; stderr: string }> {
    const childEnv = {
      ...process.env,
      NATS_URL: "nats://127.0.0.1:1",
      // The CLI connects as the operator identity, which may send rebuild requests (authentication is on).
      NATS_CREDS: credentialOf(serverKeysOf(inject("natsUrl"))!, "operator"),
      DROVER_STREAM_TAG: cp.streamTag,
      ...env,
    };
    return new Promise((ok) => {
      execFile(
        process.execPath,
        ["--import", "tsx", "cli/drover.ts", ...args],
        { cwd: ROOT, env: childEnv, timeout: 60_000 },
        (err, stdout, stderr) => {
          ok({ code: err ? Number((err as { code?: number }).code ?? -1) : 0, stdout, stderr });
        },
      );
    });
  }

  it("restores a corrupted view to exactly what the service had folded, and prints its runtimes, events folded and last sequence", async () => {
    const store = createEventStore(nc, cp.layout);
    await publishReadyRuntime(store, {
      runtimeInstanceId: RT,
      controlPlaneId: CP,
      isolationMode: "dedicated",
      tenantId: "t-cap",
    });
    await publishBeat(jetstream(nc), cp.layout, RT, 1, 3);
    const lastSeq = await store.lastSeq(runtimeRef(RT));
    // Every runtime event folded (its last sequence), not only the endpoint: runtime events and
    // heartbeats are separate followers, so the beat can be in before capacity-published is.
    const before = await eventually(
      "the runtime's events and heartbeat all in the Redis view",
      async () => {
        const d = await view.get(RT);
        return d?.lastSeq === lastSeq && d.beats[FAKE_INCARNATION]?.beat === 1 ? view.all() : undefined;
      },
      30_000,
    );
    expect(before.map((d) => d.runtimeInstanceId)).toEqual([RT]);

    // Corrupt the view: the runtime's descriptor replaced by garbage, a phantom runtime, no checkpoint.
    await redis.hset(`drover:${CP}:cap:rt:${RT}`, "d", JSON.stringify({ runtimeInstanceId: RT, garbage: true }));
    await redis
      .multi()
      .hset(`drover:${CP}:cap:rt:rt-phantom`, "d", JSON.stringify({ runtimeInstanceId: "rt-phantom" }))
      .sadd(`drover:${CP}:cap:index`, "rt-phantom")
      .exec();
    await redis.del(`drover:${CP}:cap:checkpoint:runtime-events`);
    expect(await view.all()).not.toEqual(before);

    // The control plane id comes from the service's own config file; NATS from --nats (NATS_URL points nowhere).
    const r = await drover(["capacity-rebuild", "--nats", inject("natsUrl")], { DROVER_CONFIG: cp.env.DROVER_CONFIG! });
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(await view.all()).toEqual(before);
    expect(await redis.exists(`drover:${CP}:cap:rt:rt-phantom`)).toBe(0);
    expect(await view.getCheckpoint("runtime-events")).toBe(lastSeq);
    expect(r.stdout).toMatch(new RegExp(`^capacity view of ${CP} rebuilt from stream sequence 1 in \\d+ ms\n`));
    expect(r.stdout).toContain(`runtimes in the view: 1 (${RT})\n`);
    // registered, host-started, 4 readiness layers, endpoint, capacity: 8 runtime events, the last at lastSeq
    expect(r.stdout).toContain(`runtime events folded: 8, up to stream sequence ${lastSeq}\n`);
    expect(r.stdout).toContain("heartbeats folded: 1\n");

    const json = await drover(["capacity-rebuild", "--control-plane", CP, "--json"], { NATS_URL: inject("natsUrl") });
    expect(json.code).toBe(0);
    expect(JSON.parse(json.stdout)).toMatchObject({
      controlPlaneId: CP,
      ok: true,
      runtimes: [RT],
      eventsFolded: 8,
      lastSeq,
      heartbeatsFolded: 1,
    });
    expect(await view.all()).toEqual(before);
  });

  it("exits 3 with a clear error when no capacity service answers for that control plane", async () => {
    const r = await drover(["capacity-rebuild", "--control-plane", "cp-nobody", "--timeout-ms", "2000"], {
      NATS_URL: inject("natsUrl"),
    });
    expect(r.code).toBe(3);
    expect(r.stdout).toBe("");
    expect(r.stderr).toMatch(
      new RegExp(
        `no capacity service answered on ${cp.streamTag.replace(/[.-]/g, "\\$&")}\\.drover-ctl\\.cp-nobody\\.capacity\\.rebuild within 2000 ms`,
      ),
    );
  });
});
