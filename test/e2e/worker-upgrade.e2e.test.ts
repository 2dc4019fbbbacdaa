import { randomBytes } from "node:crypto";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import type { DroverEvent } from "../../contracts/index.ts";
import { apiClient } from "../../platform/api-client.ts";
import { runCompleted } from "../support/run-completed.ts";
import { type ControlPlane } from "../../platform/control-plane-processes.ts";
import { connectHarness } from "../../platform/nats-auth/server-keys.ts";
import { createEventStore, runtimeRef, type StoredEvent } from "../../streams/index.ts";
import { eventually } from "../support/streams.ts";
import { wholeLog } from "../support/log-events.ts";
import { droverJson, startTenantStack } from "../support/tenant-stack.ts";

const ROOT = resolve(import.meta.dirname, "../..");
const TOKEN = "token-tenant-wu-000000001";
const TENANT = "t-wu";
const DIR = join(ROOT, ".run", `wu-e2e-${randomBytes(4).toString("hex")}`);
const MODULE = join(DIR, "worker.ts");
/**
 * The tenant's worker at one version: `work` answers with the version that ran it and the previous
 * step's answer. Version 1 sleeps `ms`; version 2 is faster (200 ms whatever `ms` says).
 */
const workerSource = (tag: string) => `import { defineWorker } from "../../sdk/index.ts";
export default defineWorker({
  steps: {
    work: async (_ctx, input: { ms: number; prev?: string }) => {
      await new Promise((r) => setTimeout(r, ${tag === "v1" ? "input.ms" : "200"}));
      return { ran: "${tag}", prev: input.prev ?? null };
    },
  },
});
`;
const DAG = {
  name: "wu",
  steps: [
    { id: "s1", kind: "custom", handler: "work", params: { ms: { $ref: "input.a" } } },
    {
      id: "s2",
      kind: "custom",
      handler: "work",
      dependsOn: ["s1"],
      params: { ms: { $ref: "input.b" }, prev: { $ref: "steps.s1.output.ran" } },
    },
  ],
};

/**
 * `POST /v1/runs/:id/upgrade` (docs/worker-versions.md "Upgrade") through every real service and
 * real process hosts running the tenant's worker bundled by the provisioner: a run pinned to
 * version 1 whose first step completed, version 2 deployed, the run upgraded (by the CLI), its v1
 * runtime SIGKILLed: it resumes on a version-2 runtime and its remaining step runs version 2's code.
 */
describe("worker upgrade: an upgraded run continues on the new version after its runtime dies (all services real)", () => {
  let cp: ControlPlane;
  beforeAll(async () => {
    mkdirSync(DIR, { recursive: true });
    writeFileSync(MODULE, workerSource("v1"));
    cp = await startTenantStack({
      db: 12,
      controlPlaneId: "cp-wu-e2e",
      token: TOKEN,
      tenant: {
        tenantId: TENANT,
        isolationMode: "dedicated",
        maxRuntimeInstances: 3,
        // One run per runtime and no local queue: a second run needs a second runtime.
        workersPerInstance: 1,
        maxConcurrentRunsPerInstance: 1,
        localQueueCapacity: 0,
        worker: { module: MODULE, kinds: ["work"] },
      },
    });
  });
  afterAll(async () => {
    await cp?.stop();
    rmSync(DIR, { recursive: true, force: true });
  });
  const api = () => apiClient(cp.apiUrl, TOKEN);
  const submit = async (a: number, b: number) => {
    const r = await api().post("/v1/runs", { dag: DAG, input: { a, b } });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    return r.body.sharedRunId as string;
  };
  const completed = (id: string) => runCompleted(api, id, 180_000);

  it("a run pinned to v1 with its first step done, upgraded to v2 after v2 is deployed, its v1 runtime SIGKILLed: the remaining step runs v2 code on a v2 runtime", async () => {
    const nc = await connectHarness({ servers: inject("natsUrl") });
    try {
      const store = createEventStore(nc, cp.layout);
      const log = () => wholeLog(store);
      const ofType = <T extends DroverEvent["type"]>(es: readonly StoredEvent[], t: T) =>
        es.flatMap((e) =>
          e.event.type === t ? [e as StoredEvent & { event: Extract<DroverEvent, { type: T }> }] : [],
        );

      const id = await submit(500, 60_000);
      const firstRuntime = await eventually(
        "the run's first step completed on v1",
        async () => {
          const es = await log();
          const started = ofType(es, "run.started").find((e) => e.event.correlationId === id);
          const s1 = ofType(es, "exec.step-completed").find(
            (e) => e.event.correlationId === id && e.event.data.stepId === "s1",
          );
          return started && s1 ? started.event.data.runtimeInstanceId : undefined;
        },
        90_000,
      );
      const V1 = ofType((await store.read(runtimeRef(firstRuntime))).events, "runtime.registered")[0]!.event.data
        .worker!.version;

      // Deploy v2; a second run needs a second runtime, built from the new module.
      writeFileSync(MODULE, workerSource("v2"));
      const fresh = await submit(10, 10);
      expect((await completed(fresh)).output).toEqual({ ran: "v2", prev: "v2" });
      const V2 = ofType(await log(), "runtime.registered").find(
        (r) => r.event.data.tenantId === TENANT && r.event.data.worker && r.event.data.worker.version !== V1,
      )!.event.data.worker!.version;

      // The run is still on its v1 runtime (step s2 sleeps a minute there): upgrade it by the CLI.
      const answer = await droverJson<{ run: unknown }>(cp.apiUrl, TOKEN, ["upgrade", id]);
      expect(answer).toMatchObject({ outcome: "upgraded", fromVersion: V1, toVersion: V2, kinds: ["custom:work"] });
      expect(answer.run).toMatchObject({ status: "started", workerVersion: V2 });

      const t0 = Date.now();
      const host = ofType((await store.read(runtimeRef(firstRuntime))).events, "runtime.host-started")[0]!;
      process.kill(host.event.data.pid!, "SIGKILL");
      const run = await completed(id);
      const resumedMs = Date.now() - t0;
      // s1 ran on v1 before the upgrade and was not run again; s2 ran v2's code.
      expect(run.output).toEqual({ ran: "v2", prev: "v1" });
      expect(run.workerVersion).toBe(V2);

      const es = (await log()).filter((e) => e.event.correlationId === id);
      const upgraded = es.find((e) => e.event.type === "run.upgraded")!;
      expect(upgraded.event).toMatchObject({
        writer: { service: "api" },
        data: { fromVersion: V1, toVersion: V2, by: `tenant:${TENANT}` },
      });
      const admitted = ofType(es, "run.admitted");
      expect(admitted[0]!.event.data.workerVersion).toBe(V1);
      const after = admitted.filter((a) => a.seq > upgraded.seq);
      expect(after.length).toBeGreaterThanOrEqual(1);
      expect(new Set(after.map((a) => a.event.data.workerVersion))).toEqual(new Set([V2]));
      const s1Done = ofType(es, "exec.step-completed").filter((e) => e.event.data.stepId === "s1");
      expect(s1Done).toHaveLength(1);
      console.log(
        `worker upgrade: run upgraded ${V1.slice(0, 8)} -> ${V2.slice(0, 8)}, resumed on v2 and completed ${resumedMs} ms after its v1 runtime was SIGKILLed`,
      );
    } finally {
      await nc.close();
    }
  });
});
