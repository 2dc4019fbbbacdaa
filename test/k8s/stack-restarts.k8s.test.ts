import { createHash, randomBytes } from "node:crypto";
import { type NatsConnection } from "@nats-io/transport-node";
import { connectHarness } from "../../platform/nats-auth/server-keys.ts";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import type { z } from "zod";
import { validateRunLog } from "../../aggregates/replay-validation.ts";
import type { DroverEvent, KubernetesHostConfig } from "../../contracts/index.ts";
import { startRedis, type RunningServer } from "../../platform/local-servers.ts";
import { createEventStore, type StoredEvent } from "../../streams/index.ts";
import { apiClient, chainDag } from "../../platform/api-client.ts";
import {
  startControlPlane,
  type ControlPlane,
  type ControlPlaneOptions,
} from "../../platform/control-plane-processes.ts";
import { uniqueName } from "../support/isolation.ts";
import { eventually } from "../support/streams.ts";
import { clusterClients, freshNamespace } from "./support/cluster-client.ts";
import { runtimeHostConfig, startPodReachableNats } from "./support/runtime-pods.ts";

/**
 * The whole control plane stopped (SIGTERM) and started again on the same data, three starts, with
 * every runtime a Pod on the local cluster's real API server. Runtime Pods are not the control
 * plane's processes: they outlive its stop, keep heartbeating and journaling into JetStream while it
 * is down, and are found again by the next start. Proves: every run (submitted before a stop, while
 * the stack is down, after a start) completes exactly once and passes replay validation; no runtime
 * is suspected or fenced (no incident) for a deliberate stop; each start's first dispatch comes
 * within FIRST_DISPATCH_BOUND_MS.
 */
const STARTS = 3;
const FIRST_DISPATCH_BOUND_MS = 60_000;
const TOKEN = "token-k8s-restarts-000001";
const TENANT = "t-k8s-rs";

describe("the whole stack restarted on the same data with runtime Pods (local cluster)", () => {
  let nats: RunningServer, redis: RunningServer;
  let nc: NatsConnection;
  let cp: ControlPlane | undefined;
  let namespace: string;
  beforeAll(async () => {
    [nats, redis] = await Promise.all([startPodReachableNats(), startRedis()]);
    nc = await connectHarness({ servers: nats.url });
    namespace = await freshNamespace(clusterClients().core, "restarts");
  });
  afterAll(async () => {
    await cp?.stop();
    await nc?.close();
    await clusterClients()
      .core.deleteNamespace({ name: namespace })
      .catch(() => undefined);
    await Promise.all([nats?.stop(), redis?.stop()]);
  });

  it("three starts: every run completes once, Pods outlive each stop with no incident, first dispatch bounded", async () => {
    const kubernetes: z.input<typeof KubernetesHostConfig> = {
      kubeconfig: inject("k8sKubeconfig"),
      namespace,
      exposure: "pod-ip",
      namePrefix: `r${randomBytes(2).toString("hex")}`,
      ...runtimeHostConfig(),
    };
    const data = { streamTag: uniqueName("k8srs"), logDir: "" };
    const options = (): ControlPlaneOptions => ({
      natsUrl: nats.url,
      redisUrl: redis.url,
      ...(data.logDir ? { resume: data } : {}),
      config: {
        controlPlaneId: "cp-k8s-restarts",
        heartbeatIntervalMs: 250,
        dispatchTimeoutMs: 2000,
        kubernetes,
        tenants: [
          {
            tenantId: TENANT,
            isolationMode: "dedicated",
            hostProvider: "kubernetes",
            maxRuntimeInstances: 2,
            workersPerInstance: 2,
            maxConcurrentRunsPerInstance: 2,
            localQueueCapacity: 4,
          },
        ],
        tokens: { [TOKEN]: { role: "tenant", tenantId: TENANT } },
      },
    });
    const runs: string[] = [];
    const firstDispatch: number[] = [];
    for (let start = 0; start < STARTS; start++) {
      const startedAt = Date.now();
      cp = await startControlPlane(options());
      if (!data.logDir) Object.assign(data, { streamTag: cp.streamTag, logDir: cp.logDir });
      const store = createEventStore(nc, cp.layout);
      const api = apiClient(cp.apiUrl, TOKEN);
      const submit = async (n: number) => {
        for (let i = 0; i < n; i++) {
          const r = await api.submit(chainDag(8, 25), `k8s-rs-${runs.length}`);
          expect([201, 202], JSON.stringify(r.body)).toContain(r.status);
          runs.push(r.body.sharedRunId);
        }
      };
      await submit(1);
      const first = runs.at(-1)!;
      const dispatched = await eventually(
        `run ${first} dispatched after start ${start}`,
        async () =>
          (await store.read({ aggregate: "run", tenantId: TENANT, id: first })).events.find(
            (e) => e.event.type === "run.dispatched",
          ),
        FIRST_DISPATCH_BOUND_MS + 30_000,
      );
      firstDispatch.push(dispatched.time.getTime() - startedAt);
      // work in flight when the stop comes
      await submit(3);
      if (start < STARTS - 1) await cp.stop(true);
    }
    const api = apiClient(cp!.apiUrl, TOKEN);
    await eventually(
      "every run completed",
      async () => {
        for (const id of runs) if ((await api.run(id)).body?.status !== "completed") return undefined;
        return true;
      },
      120_000,
    );
    const store = createEventStore(nc, cp!.layout);
    const log: StoredEvent[] = [];
    await store.replay({ seq: 1 }, (e) => void log.push(e));
    const types = (t: DroverEvent["type"]) => log.filter((e) => e.event.type === t);
    for (const id of runs) expect(types("run.completed").filter((e) => e.subject.includes(`.${id}.`))).toHaveLength(1);
    expect(types("runtime.suspected")).toEqual([]);
    expect(types("runtime.fenced")).toEqual([]);
    // the Pods outlived every stop: no runtime retired, and no start needed more than the tenant's two
    expect(types("runtime.retired")).toEqual([]);
    expect(types("runtime.registered").length).toBeLessThanOrEqual(2);
    for (const id of runs) {
      const v = validateRunLog(id, log, { digest: (x) => createHash("sha256").update(x).digest("hex") });
      expect(v, v.kind === "divergence" ? v.divergence.message : "").toMatchObject({ kind: "match" });
    }
    console.log(JSON.stringify({ runs: runs.length, firstDispatchMs: firstDispatch }));
    for (const ms of firstDispatch) expect(ms).toBeLessThan(FIRST_DISPATCH_BOUND_MS);
  }, 600_000);
});
