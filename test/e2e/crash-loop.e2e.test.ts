import { createHash } from "node:crypto";
import { join, resolve } from "node:path";
import { validateRunLog } from "../../aggregates/replay-validation.ts";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import type { DagInput, DroverEvent } from "../../contracts/index.ts";
import { createEventStore, execRef, runRef, type StoredEvent } from "../../streams/index.ts";
import { apiClient, chainDag } from "../../platform/api-client.ts";
import { startControlPlane, type ControlPlane } from "../../platform/control-plane-processes.ts";
import { eventually } from "../support/streams.ts";
import { type NatsConnection } from "@nats-io/transport-node";
import { connectHarness } from "../../platform/nats-auth/server-keys.ts";

/**
 * Crash loops end (every service a real process, real process hosts, real nats-server and Redis):
 * a step that SIGKILLs its own runtime on every attempt is resumed `maxCrashRecoveries` times, and
 * the next crash fails its run with `crash-loop` instead of another resume; the step before it ran
 * exactly once; another tenant's runs complete meanwhile.
 */
const ROOT = resolve(import.meta.dirname, "../..");
const TOKENS = {
  "token-tenant-crash-00001": { role: "tenant", tenantId: "t-crash" },
  "token-tenant-calm-000001": { role: "tenant", tenantId: "t-calm" },
} as const;
const DAG: DagInput = {
  name: "crashes-its-host",
  steps: [
    { id: "warm", kind: "compute", params: { durationMs: 10 } },
    { id: "boom", kind: "custom", handler: "crash", dependsOn: ["warm"] },
  ],
};

describe("a step that crashes its runtime every time ends crash-loop after maxCrashRecoveries resumes (all services real)", () => {
  let cp: ControlPlane;
  let nc: NatsConnection;
  beforeAll(async () => {
    const redis = new Redis(inject("redisUrl"), { db: 12 });
    await redis.flushdb();
    redis.disconnect();
    cp = await startControlPlane({
      natsUrl: inject("natsUrl"),
      redisUrl: `${inject("redisUrl")}/12`,
      config: {
        controlPlaneId: "cp-crash-loop",
        heartbeatIntervalMs: 250,
        dispatchTimeoutMs: 2000,
        tenants: [
          {
            tenantId: "t-crash",
            isolationMode: "dedicated",
            maxRuntimeInstances: 1,
            maxCrashRecoveries: 1,
            worker: { module: join(ROOT, "test/support/workers/crash-worker.ts"), kinds: ["crash"] },
          },
          { tenantId: "t-calm", isolationMode: "dedicated", maxRuntimeInstances: 1 },
        ],
        tokens: TOKENS,
      },
    });
    nc = await connectHarness({ servers: inject("natsUrl") });
  });
  afterAll(async () => {
    await nc?.close();
    await cp?.stop();
  });

  it("two crashes with maxCrashRecoveries 1: one resume, then run failed crash-loop naming both incidents; the calm tenant's runs complete", async () => {
    const crash = apiClient(cp.apiUrl, "token-tenant-crash-00001");
    const calm = apiClient(cp.apiUrl, "token-tenant-calm-000001");
    const sub = await crash.post("/v1/runs", { dag: DAG });
    expect(sub.status, JSON.stringify(sub.body)).toBe(201);
    const id = sub.body.sharedRunId as string;
    const calmIds: string[] = [];
    for (let i = 0; i < 3; i++) {
      const r = await calm.submit(chainDag(4, 20), `calm-${i}`);
      expect([201, 202]).toContain(r.status);
      calmIds.push(r.body.sharedRunId);
    }
    const failed = await eventually(
      `run ${id} failed`,
      async () => {
        const r = await crash.run(id);
        expect(r.body.status).not.toBe("completed");
        return r.body.status === "failed" ? r.body : undefined;
      },
      120_000,
    );
    expect(failed.lastReason).toBe("crash-loop");
    for (const c of calmIds)
      await eventually(
        `calm run ${c} completed`,
        async () => ((await calm.run(c)).body.status === "completed" ? true : undefined),
        60_000,
      );

    const store = createEventStore(nc, cp.layout);
    const run = (await store.read(runRef("t-crash", id))).events.map((e: StoredEvent) => e.event as DroverEvent);
    const resumes = run.filter((e) => e.type === "run.requeued-for-resume");
    expect(resumes).toHaveLength(1);
    const end = run.filter((e) => e.type === "run.failed");
    expect(end).toHaveLength(1);
    const reason = end[0]!.type === "run.failed" ? end[0]!.data.reason : undefined;
    expect(reason?.code).toBe("crash-loop");
    const firstIncident = resumes[0]!.type === "run.requeued-for-resume" ? resumes[0]!.data.incidentId : "";
    expect(reason?.detail).toContain("crashed its runtime 2 times");
    expect(reason?.detail).toContain(firstIncident);
    // the step before the crashing one ran exactly once, across both crashes
    const started = run.find((e) => e.type === "run.started");
    const executionId = started?.type === "run.started" ? started.data.executionId : "";
    const journal = (await store.read(execRef("t-crash", executionId))).events.map((e) => e.event as DroverEvent);
    expect(journal.filter((e) => e.type === "exec.step-completed")).toHaveLength(1);
    expect(journal.filter((e) => e.type === "exec.paused-for-recovery")).toHaveLength(2);
    // the whole causal chain replays: the run, its execution and both incidents
    const log: StoredEvent[] = [];
    await store.replay({ seq: 1 }, (e) => void log.push(e));
    const v = validateRunLog(id, log, { digest: (x) => createHash("sha256").update(x).digest("hex") });
    expect(v, v.kind === "divergence" ? v.divergence.message : "").toMatchObject({ kind: "match" });
  }, 180_000);
});
