import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import type { DroverEvent } from "../../contracts/index.ts";
import { apiClient } from "../../platform/api-client.ts";
import { runCompleted } from "../support/run-completed.ts";
import { type ControlPlane } from "../../platform/control-plane-processes.ts";
import { connectHarness } from "../../platform/nats-auth/server-keys.ts";
import { OPERATOR_TOKEN } from "../../proof/scenario-config.ts";
import { createEventStore, runtimeRef, workerDeploysRef, type StoredEvent } from "../../streams/index.ts";
import { eventually } from "../support/streams.ts";
import { droverJson, startTenantStack } from "../support/tenant-stack.ts";
import { ofType, wholeLog } from "../support/log-events.ts";
import { sleepingWorker, type RuntimeRow } from "../support/sleeping-worker.ts";

const TOKEN = "token-tenant-wd-000000001";
const TENANT = "t-wd";
const LONG = 6;
const WORKER = sleepingWorker("wd");

/**
 * Deploys as events (docs/worker-versions.md "Deploys as events") through every real service, real
 * process hosts running the tenant's worker bundled by the provisioner, and nothing killed: runs on
 * v1 run on a live v1 runtime; v2 is deployed by `drover workers deploy` (a recorded event, no
 * runtime start); new runs go to a v2 runtime started for them while the v1 runtime, still alive,
 * shows draining with its runs and retires when the last of them ends.
 */
describe("worker deploys as events: a deploy sends new runs to the new version while a live old runtime drains and retires (all services real)", () => {
  let cp: ControlPlane;
  beforeAll(async () => {
    WORKER.write("v1");
    cp = await startTenantStack({
      db: 13,
      controlPlaneId: "cp-wd-e2e",
      token: TOKEN,
      tenant: {
        tenantId: TENANT,
        isolationMode: "dedicated",
        maxRuntimeInstances: 3,
        workersPerInstance: LONG + 2,
        maxConcurrentRunsPerInstance: LONG + 2,
        localQueueCapacity: LONG + 2,
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
  const runtimes = async () =>
    (await droverJson<{ runtimes: RuntimeRow[] }>(cp.apiUrl, OPERATOR_TOKEN, ["runtimes", "--tenant", TENANT]))
      .runtimes;

  it("runs on v1 keep running on their live v1 runtime; v2 deployed by event; new runs start a v2 runtime and run v2; v1 shows draining and retires after its last run", async () => {
    const nc = await connectHarness({ servers: inject("natsUrl") });
    try {
      const store = createEventStore(nc, cp.layout);
      const log = () => wholeLog(store);
      const idOf = (e: StoredEvent) => e.subject.split(".").at(-2)!;

      // The provisioner announced v1 at its start, before any runtime ran it.
      const announced = await eventually(
        "the provisioner's start announcement",
        async () => (await store.read(workerDeploysRef(TENANT))).events[0],
        30_000,
      );
      expect(announced.event.type).toBe("worker.deployed");
      const V1 = (announced.event as Extract<DroverEvent, { type: "worker.deployed" }>).data.version;

      const long = await Promise.all(Array.from({ length: LONG }, () => submit(12_000)));
      const startedOn = await eventually(
        "the long runs started",
        async () => {
          const started = ofType(await log(), "run.started");
          return started.length >= LONG ? started.map((x) => x.data.runtimeInstanceId) : undefined;
        },
        90_000,
      );
      // One runtime holds them all (it has LONG + 2 slots): the scenario's premise, checked.
      expect(new Set(startedOn).size).toBe(1);
      const v1Runtime = startedOn[0]!;
      const v1Reg = ofType((await store.read(runtimeRef(v1Runtime))).events, "runtime.registered")[0]!;
      expect(v1Reg.data.worker).toMatchObject({ version: V1, pinned: false });
      expect(await runtimes()).toEqual([
        expect.objectContaining({ runtimeInstanceId: v1Runtime, worker: expect.objectContaining({ draining: false }) }),
      ]);

      // Deploy v2: the module rewritten and `drover workers deploy`; nothing is killed.
      WORKER.write("v2");
      const t0 = Date.now();
      const deployed = await droverJson<{ deployed: { version: string } }>(cp.apiUrl, TOKEN, ["workers", "deploy"]);
      const deployMs = Date.now() - t0;
      expect(deployed).toMatchObject({
        outcome: "deployed",
        tenantId: TENANT,
        deployed: { previous: V1, requestedBy: `tenant:${TENANT}`, kinds: ["work"] },
      });
      const V2 = deployed.deployed.version;
      expect(V2).not.toBe(V1);

      // At once, before any v2 runtime exists: the live v1 runtime drains, holding the long runs.
      const draining = await eventually(
        "the live v1 runtime shown draining with its runs",
        async () => {
          const rows = await runtimes();
          const row = rows.find((r) => r.runtimeInstanceId === v1Runtime);
          return row?.worker?.draining && row.worker.pinnedRuns === LONG ? row : undefined;
        },
        10_000,
      );
      expect(draining.worker).toMatchObject({ version: V1, pinned: false });

      const fresh = await Promise.all(Array.from({ length: 5 }, () => submit(200)));
      const freshRuns = await Promise.all(fresh.map(completed));
      const freshMs = Date.now() - t0;
      const longRuns = await Promise.all(long.map(completed));
      const settledMs = Date.now() - t0;
      expect(longRuns.map((r) => r.output)).toEqual(long.map(() => ({ ran: "v1" })));
      expect(freshRuns.map((r) => r.output)).toEqual(fresh.map(() => ({ ran: "v2" })));

      const es = await log();
      const admitted = (id: string) =>
        ofType(
          es.filter((e) => e.event.correlationId === id),
          "run.admitted",
        );
      // The long runs were placed once, on the v1 runtime: never moved, never killed.
      for (const id of long)
        expect(
          admitted(id).map((a) => [a.data.runtimeInstanceId, a.data.workerVersion]),
          id,
        ).toEqual([[v1Runtime, V1]]);
      // Every placement of a new run was on v2, on a runtime other than the v1 one.
      for (const id of fresh)
        for (const a of admitted(id)) {
          expect(a.data.workerVersion, id).toBe(V2);
          expect(a.data.runtimeInstanceId, id).not.toBe(v1Runtime);
        }
      const registered = es.filter(
        (e) => e.event.type === "runtime.registered" && (e.event.data as { tenantId?: string }).tenantId === TENANT,
      );
      const v2Runtimes = registered.filter(
        (e) => (e.event as Extract<DroverEvent, { type: "runtime.registered" }>).data.worker?.version === V2,
      );
      expect(v2Runtimes.length).toBeGreaterThanOrEqual(1);
      for (const r of v2Runtimes)
        expect((r.event as Extract<DroverEvent, { type: "runtime.registered" }>).data.worker?.pinned).toBe(false);
      // The v1 runtime never exited on its own or was fenced while it ran the long runs.
      const v1Events = es.filter((e) => idOf(e) === v1Runtime).map((e) => e.event.type);
      expect(v1Events).not.toContain("runtime.fenced");

      // It retires as drained after the last long run ended; the v2 runtime stays.
      const retired = await eventually(
        "the v1 runtime retired as drained",
        async () => (await log()).find((e) => e.event.type === "runtime.retired" && idOf(e) === v1Runtime),
        60_000,
      );
      expect(JSON.stringify(retired.event.data)).toContain("drained");
      const lastEnd = Math.max(
        ...es.filter((e) => e.event.type === "run.completed" && long.includes(e.event.correlationId)).map((e) => e.seq),
      );
      expect(retired.seq).toBeGreaterThan(lastEnd);
      const retiredAfterMs = retired.time.getTime() - t0 - settledMs;
      const listed = await runtimes();
      expect(listed.map((r) => r.runtimeInstanceId)).not.toContain(v1Runtime);
      expect(listed.map((r) => [r.worker?.version, r.worker?.draining])).toEqual(listed.map(() => [V2, false]));
      // The deploys aggregate: the start announcement and the request answered, in order.
      const deploys = (await store.read(workerDeploysRef(TENANT))).events.map((e) => e.event.type);
      expect(deploys).toEqual(["worker.deployed", "worker.deploy-requested", "worker.deployed"]);
      console.log(
        `worker deploys: v2 deployed by request in ${deployMs} ms; 5 new runs on v2 settled ${freshMs} ms after; ` +
          `${LONG} v1 runs kept their live runtime and settled ${settledMs} ms after; it retired ~${retiredAfterMs} ms after them`,
      );
    } finally {
      await nc.close();
    }
  });
});
