import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import type { DroverEvent } from "../../contracts/index.ts";
import { apiClient } from "../../platform/api-client.ts";
import { runCompleted } from "../support/run-completed.ts";
import { type ControlPlane } from "../../platform/control-plane-processes.ts";
import { connectHarness } from "../../platform/nats-auth/server-keys.ts";
import { OPERATOR_TOKEN } from "../../proof/scenario-config.ts";
import { createEventStore, runtimeRef } from "../../streams/index.ts";
import { eventually } from "../support/streams.ts";
import { droverJson, startTenantStack } from "../support/tenant-stack.ts";
import { ofType, wholeLog } from "../support/log-events.ts";
import { sleepingWorker, type RuntimeRow } from "../support/sleeping-worker.ts";

const TOKEN = "token-tenant-wv-000000001";
const TENANT = "t-wv";
const LONG = 20;
const WORKER = sleepingWorker("wv");

/**
 * Pinned worker versions (docs/worker-versions.md) through every real service, real process hosts
 * running the tenant's worker bundled by the provisioner: 20 long runs on version 1, version 2
 * deployed (the module rewritten), the runtime SIGKILLed. The resumed runs continue on version 1
 * (a replacement runtime started from version 1's bundle), new runs go to version 2, and the
 * version-1 runtime retires once its last run ended.
 */
describe("worker versions: resumed runs keep their version, new runs take the deployed one, drained runtimes retire (all services real)", () => {
  let cp: ControlPlane;
  beforeAll(async () => {
    WORKER.write("v1");
    cp = await startTenantStack({
      db: 13,
      controlPlaneId: "cp-wv-e2e",
      token: TOKEN,
      tenant: {
        tenantId: TENANT,
        isolationMode: "dedicated",
        maxRuntimeInstances: 3,
        workersPerInstance: LONG,
        maxConcurrentRunsPerInstance: LONG,
        localQueueCapacity: LONG,
        worker: { module: WORKER.module, kinds: ["work"] },
      },
    });
  });
  afterAll(async () => {
    await cp?.stop();
    WORKER.remove();
  });
  const api = () => apiClient(cp.apiUrl, TOKEN);
  const submit = async (ms: number) => {
    const r = await api().post("/v1/runs", { dag: WORKER.dag, input: { ms } });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    return r.body.sharedRunId as string;
  };
  const completed = (id: string) => runCompleted(api, id, 180_000);

  it("20 long runs on v1, v2 deployed, the runtime SIGKILLed: the resumed runs finish on v1, new runs run v2, the v1 runtimes retire when their last run ends", async () => {
    const nc = await connectHarness({ servers: inject("natsUrl") });
    try {
      const store = createEventStore(nc, cp.layout);
      const log = () => wholeLog(store);

      const long = await Promise.all(Array.from({ length: LONG }, () => submit(12_000)));
      const firstRuntime = await eventually(
        "20 runs started on one runtime",
        async () => {
          const started = ofType(await log(), "run.started");
          return started.length >= LONG ? started[0]!.data.runtimeInstanceId : undefined;
        },
        90_000,
      );
      const v1Reg = ofType((await store.read(runtimeRef(firstRuntime))).events, "runtime.registered")[0]!;
      const V1 = v1Reg.data.worker!.version;
      expect(v1Reg.data.worker).toMatchObject({ pinned: false });

      // Deploy v2, then crash the v1 runtime with its 20 runs in flight.
      WORKER.write("v2");
      const host = ofType((await store.read(runtimeRef(firstRuntime))).events, "runtime.host-started")[0]!;
      process.kill(host.data.pid!, "SIGKILL");
      const fresh = await Promise.all(Array.from({ length: 5 }, () => submit(200)));

      const t0 = Date.now();
      // While the resumed runs run, `drover runtimes` shows the pinned v1 runtime draining with their count.
      const cli = async () =>
        (await droverJson<{ runtimes: RuntimeRow[] }>(cp.apiUrl, OPERATOR_TOKEN, ["runtimes", "--tenant", TENANT]))
          .runtimes;
      const draining = await eventually(
        "the pinned v1 runtimes shown draining with the resumed runs",
        async () => {
          const rows = (await cli()).filter((r) => r.worker?.version === V1 && r.worker.pinned && r.worker.draining);
          return rows.reduce((n, r) => n + r.worker!.pinnedRuns, 0) === LONG ? rows : undefined;
        },
        30_000,
      );
      const longRuns = await Promise.all(long.map(completed));
      const freshRuns = await Promise.all(fresh.map(completed));
      const settledMs = Date.now() - t0;
      // The resumed runs ran v1's code; the new ones v2's.
      expect(longRuns.map((r) => r.output)).toEqual(long.map(() => ({ ran: "v1" })));
      expect(freshRuns.map((r) => r.output)).toEqual(fresh.map(() => ({ ran: "v2" })));

      const es = await log();
      const admittedOf = (id: string) =>
        es.filter((e) => e.event.type === "run.admitted" && e.event.correlationId === id);
      const versionsOf = (id: string) =>
        admittedOf(id).map((e) => (e.event as Extract<DroverEvent, { type: "run.admitted" }>).data.workerVersion);
      const registered = ofType(es, "runtime.registered").filter((r) => r.data.tenantId === TENANT);
      const v2 = registered.filter((r) => r.data.worker?.version !== V1);
      expect(v2.length).toBeGreaterThanOrEqual(1);
      const V2 = v2[0]!.data.worker!.version;
      expect(V2).not.toBe(V1);
      for (const id of long) {
        expect(versionsOf(id).length, id).toBeGreaterThanOrEqual(2); // placed again after the crash
        expect(new Set(versionsOf(id)), id).toEqual(new Set([V1]));
      }
      // A new run submitted before recovery fenced the dead runtime may be admitted there (its
      // version was still current) and fail to dispatch; it starts on v2 only.
      const startedOn = (id: string) =>
        es
          .filter((e) => e.event.type === "run.started" && e.event.correlationId === id)
          .map((st) => {
            const before = admittedOf(id).filter((a) => a.seq < st.seq);
            return (before.at(-1)!.event as Extract<DroverEvent, { type: "run.admitted" }>).data.workerVersion;
          });
      for (const id of fresh) expect(new Set(startedOn(id)), id).toEqual(new Set([V2]));
      for (const id of long) expect(new Set(startedOn(id)), id).toEqual(new Set([V1]));
      const pinnedV1 = registered.filter((r) => r.data.worker?.version === V1 && r.data.worker.pinned);
      expect(pinnedV1.length).toBeGreaterThanOrEqual(1);
      const v1Runtimes = registered
        .filter((r) => r.data.worker?.version === V1)
        .map((r) =>
          es
            .find((e) => e.event === r)!
            .subject.split(".")
            .at(-2)!,
        );

      // The v1 runtime started for the pinned runs drains and retires once its last run ended;
      // the v2 runtime stays.
      const retired = await eventually(
        "the pinned v1 runtimes retired as drained",
        async () => {
          const all = await log();
          const reasons = v1Runtimes
            .filter((id) => id !== firstRuntime)
            .map((id) => all.find((e) => e.event.type === "runtime.retired" && e.subject.split(".").at(-2) === id));
          return reasons.every((x) => x !== undefined) ? reasons : undefined;
        },
        60_000,
      );
      // Retired after the last of the pinned runs ended, never while one ran.
      const lastEnd = Math.max(
        ...es.filter((e) => e.event.type === "run.completed" && long.includes(e.event.correlationId)).map((e) => e.seq),
      );
      for (const r of retired) {
        expect(JSON.stringify(r!.event.data)).toContain("drained");
        expect(r!.seq).toBeGreaterThan(lastEnd);
      }
      const retiredAfterMs = Math.max(...retired.map((r) => r!.time.getTime())) - t0 - settledMs;
      const rows = (await apiClient(cp.apiUrl, OPERATOR_TOKEN).get("/v1/runtimes")).body.runtimes as {
        runtimeInstanceId: string;
        status: string;
        worker: { version: string; draining: boolean; pinnedRuns: number } | null;
      }[];
      const live = rows.filter((r) => r.worker && r.status !== "retired" && r.status !== "fenced");
      expect(live.map((r) => [r.worker!.version, r.worker!.draining])).toEqual(live.map(() => [V2, false]));
      // The CLI lists live runtimes: the retired one is gone from it, and none drains.
      const listed = await cli();
      for (const d of draining) expect(listed.map((r) => r.runtimeInstanceId)).not.toContain(d.runtimeInstanceId);
      expect(listed.map((r) => [r.worker?.version, r.worker?.draining])).toEqual(listed.map(() => [V2, false]));
      console.log(
        `worker versions: ${LONG} resumed on v1 and 5 new on v2 settled ${settledMs} ms after the kill; ` +
          `v1 runtimes ${v1Runtimes.length}, v2 runtimes ${v2.length}; drover runtimes showed ${LONG} pinned runs on ${draining.length} draining v1 runtime(s); the pinned v1 runtime retired ~${retiredAfterMs} ms after the runs settled`,
      );
    } finally {
      await nc.close();
    }
  });
});
