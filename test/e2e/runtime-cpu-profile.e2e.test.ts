import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Redis } from "ioredis";
import { afterAll, describe, expect, inject, it } from "vitest";
import { apiClient, chainDag } from "../../platform/api-client.ts";
import { startControlPlane } from "../../platform/control-plane-processes.ts";
import { eventually } from "../support/streams.ts";

/**
 * DROVER_CPU_PROF_DIR profiles the runtimes of a control plane started as processes (real
 * nats-server, Redis, process hosts): the plane's stop drains each runtime (SIGTERM) once every
 * service but the provisioner has stopped, and the runtime writes its V8 CPU profile as it exits.
 * Stopped by the provisioner alone (SIGKILL), or drained while recovery still ran (which fenced it
 * on its closed connection, mid-exit), it wrote none.
 */
const TOKEN = "token-tenant-profiled-0001";

describe("a profiled control plane's stop leaves each runtime's CPU profile (all services real)", () => {
  const saved = { dir: process.env.DROVER_CPU_PROF_DIR, only: process.env.DROVER_CPU_PROF_SERVICES };
  let profDir = "";
  afterAll(async () => {
    if (saved.dir === undefined) delete process.env.DROVER_CPU_PROF_DIR;
    else process.env.DROVER_CPU_PROF_DIR = saved.dir;
    if (saved.only === undefined) delete process.env.DROVER_CPU_PROF_SERVICES;
    else process.env.DROVER_CPU_PROF_SERVICES = saved.only;
    if (profDir) await rm(profDir, { recursive: true, force: true });
  });

  it("a runtime that ran a run writes a .cpuprofile of its own code when the plane stops", async () => {
    profDir = await mkdtemp(join(tmpdir(), "drover-prof-"));
    process.env.DROVER_CPU_PROF_DIR = profDir;
    process.env.DROVER_CPU_PROF_SERVICES = "runtime";
    const redis = new Redis(inject("redisUrl"), { db: 13 });
    await redis.flushdb();
    redis.disconnect();
    const cp = await startControlPlane({
      natsUrl: inject("natsUrl"),
      redisUrl: `${inject("redisUrl")}/13`,
      config: {
        controlPlaneId: "cp-cpu-profile",
        heartbeatIntervalMs: 250,
        dispatchTimeoutMs: 2000,
        tenants: [{ tenantId: "t-profiled", isolationMode: "dedicated", maxRuntimeInstances: 1 }],
        tokens: { [TOKEN]: { role: "tenant", tenantId: "t-profiled" } },
      },
    });
    try {
      const api = apiClient(cp.apiUrl, TOKEN);
      const sub = await api.submit(chainDag(5, 0));
      expect(sub.status, JSON.stringify(sub.body)).toBe(201);
      const id = sub.body.sharedRunId as string;
      await eventually(
        "the run completed",
        async () => ((await api.run(id)).body.status === "completed" ? true : undefined),
        60_000,
      );
      // Services are not profiled (DROVER_CPU_PROF_SERVICES=runtime): nothing written before the stop.
      expect(await readdir(profDir)).toEqual([]);
    } finally {
      await cp.stop();
    }
    const files = (await readdir(profDir)).filter((f) => f.endsWith(".cpuprofile"));
    expect(files.length).toBeGreaterThanOrEqual(1);
    const urls = new Set<string>();
    for (const f of files) {
      const profile = JSON.parse(await readFile(join(profDir, f), "utf8")) as {
        nodes: { callFrame: { url: string } }[];
      };
      for (const n of profile.nodes) urls.add(n.callFrame.url);
    }
    // The runtime's own code (its bundle, or services/runtime when it starts from source) is in a profile.
    expect([...urls].some((u) => /\/\.run\/build\/runtime-[0-9a-f]+\.cjs$|\/services\/runtime\//.test(u))).toBe(true);
  });
});
