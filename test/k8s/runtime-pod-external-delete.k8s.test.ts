import { randomBytes } from "node:crypto";
import { jetstream } from "@nats-io/jetstream";
import { type NatsConnection } from "@nats-io/transport-node";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import type { z } from "zod";
import type { CapacityDescriptor } from "../../aggregates/capacity/descriptor.ts";
import { routability } from "../../aggregates/capacity/routability.ts";
import { decodeEvent, isPlannedStopId, type KubernetesHostConfig } from "../../contracts/index.ts";
import { apiClient, chainDag } from "../../platform/api-client.ts";
import { redisCapacityView } from "../../platform/capacity-view.ts";
import { startControlPlane, type ControlPlane } from "../../platform/control-plane-processes.ts";
import { follow } from "../../platform/follow.ts";
import { startRedis, type RunningServer } from "../../platform/local-servers.ts";
import { connectHarness } from "../../platform/nats-auth/server-keys.ts";
import { createEventStore, runtimeRef, type StoredEvent } from "../../streams/index.ts";
import { eventually } from "../support/streams.ts";
import { clusterClients, freshNamespace } from "./support/cluster-client.ts";
import { runtimeHostConfig, startPodReachableNats } from "./support/runtime-pods.ts";

const TENANT = "t-k8s-xdel";
const TOKEN = "token-k8s-external-del-01";
const CP = "cp-k8s-external-delete";

/**
 * A runtime Pod deleted by someone other than drover (`kubectl delete pod`: an API DELETE with the
 * Pod's grace period, as an eviction is), every service a real process on real nats-server and Redis,
 * the runtime a Pod on the local cluster's real node. The kubelet SIGTERMs the runtime, which drains:
 * capacity drops it at its draining beat, the runs it holds finish on it, and once its Pod UID is
 * gone the provisioner records a planned stop (`retired` with `stopped`, the Pod UID gone as proof)
 * rather than `host-exited` (an incident) when the kubelet reports the container terminated. No
 * `suspected`, no fence; every run completes exactly once. The Pod counterpart of
 * test/e2e/runtime-external-stop.e2e.test.ts.
 */
describe("a runtime Pod deleted from outside drover is a planned stop, not an incident (local cluster)", () => {
  let nats: RunningServer, redisServer: RunningServer;
  let nc: NatsConnection;
  let cp: ControlPlane | undefined;
  let namespace: string;
  beforeAll(async () => {
    [nats, redisServer] = await Promise.all([startPodReachableNats(), startRedis()]);
    nc = await connectHarness({ servers: nats.url });
    namespace = await freshNamespace(clusterClients().core, "xdel");
    const kubernetes: z.input<typeof KubernetesHostConfig> = {
      kubeconfig: inject("k8sKubeconfig"),
      namespace,
      exposure: "pod-ip",
      namePrefix: `x${randomBytes(2).toString("hex")}`,
      ...runtimeHostConfig(),
    };
    cp = await startControlPlane({
      natsUrl: nats.url,
      redisUrl: redisServer.url,
      config: {
        controlPlaneId: CP,
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
            localQueueCapacity: 2,
          },
        ],
        tokens: { [TOKEN]: { role: "tenant", tenantId: TENANT } },
      },
    });
  }, 240_000);
  afterAll(async () => {
    await cp?.stop();
    await nc?.close();
    await Promise.all([nats?.stop(), redisServer?.stop()]);
  });

  it("drains in its Pod, drops out of capacity at its draining beat, completes every run once, and records a planned stop with the Pod UID gone as proof", async () => {
    const { core } = clusterClients();
    const redis = new Redis(redisServer.url);
    try {
      const store = createEventStore(nc, cp!.layout);
      const api = apiClient(cp!.apiUrl, TOKEN);
      // Steps completed per runtime (exec.step-completed does not name it: exec.started / resumed do).
      const onRuntime = new Map<string, string>();
      const steps = new Map<string, number>();
      const gate = await follow(
        jetstream(nc),
        { stream: cp!.layout.eventStream, filters: [`${cp!.layout.eventPrefix}.exec.${TENANT}.>`] },
        (m) => {
          const e = decodeEvent(m.data);
          const ex = m.subject.split(".").at(-2)!;
          if (e.type === "exec.started" || e.type === "exec.resumed") onRuntime.set(ex, e.data.runtimeInstanceId);
          if (e.type === "exec.step-completed") {
            const rt = onRuntime.get(ex);
            if (rt) steps.set(rt, (steps.get(rt) ?? 0) + 1);
          }
          return Promise.resolve();
        },
      );
      const ids: string[] = [];
      // Two running and two queued locally (2 slots + 2 queued per runtime), ~3 s each: well inside
      // the Pod's 30 s termination grace.
      for (let i = 0; i < 4; i++) ids.push((await api.submit(chainDag(12, 250), `before-${i}`)).body.sharedRunId);
      const target = await eventually(
        "a runtime with steps completed",
        async () => [...steps].find(([, n]) => n >= 2)?.[0],
        180_000,
      );
      await gate.stop();
      const host = (await store.read(runtimeRef(target))).events.find((s) => s.event.type === "runtime.host-started");
      if (host?.event.type !== "runtime.host-started" || !host.event.data.podName || !host.event.data.podUid)
        throw new Error(`no Pod for ${target}`);
      const { podName, podUid } = host.event.data;
      const heldAtStop = ids.length;
      // What `kubectl delete pod` sends: a DELETE with the Pod's own grace period.
      await core.deleteNamespacedPod({ namespace, name: podName });

      // Capacity drops it at its draining beat, while its runs still run on it.
      const view = redisCapacityView<CapacityDescriptor>(redis, CP);
      const reasons = await eventually(
        "the capacity view says the runtime is draining",
        async () => {
          const d = await view.get(target);
          const r = d && routability(d, { now: Date.now(), staleMs: 750, reservedSlots: 0 });
          return r?.reasons.includes("draining") ? r : undefined;
        },
        15_000,
      );
      expect(reasons.canAcceptRun).toBe(false);
      // Runs submitted meanwhile go elsewhere.
      for (let i = 0; i < 2; i++) ids.push((await api.submit(chainDag(3, 50), `after-${i}`)).body.sharedRunId);

      for (const id of ids)
        await eventually(
          `run ${id} completed`,
          async () => ((await api.run(id)).body?.status === "completed" ? true : undefined),
          240_000,
        );
      const ended = await eventually(
        "the deleted runtime retired (or suspected, or its exit recorded)",
        async () => {
          const types = (await store.read(runtimeRef(target))).events.map((s) => s.event.type);
          const ends: readonly string[] = ["runtime.retired", "runtime.suspected", "runtime.host-exited"];
          return types.some((t) => ends.includes(t)) ? types : undefined;
        },
        90_000,
      );
      // A late suspicion would come within the staleness bound and the kill budget's fence: give it a moment.
      await new Promise((r) => setTimeout(r, 3_000));
      const events = (await store.read(runtimeRef(target))).events;
      const types = events.map((s) => s.event.type);
      const suspected = events.flatMap((s) => (s.event.type === "runtime.suspected" ? [s.event.data.reason] : []));
      expect(types, `${ended.join(",")} ${JSON.stringify(suspected)}`).not.toContain("runtime.suspected");
      expect(types).not.toContain("runtime.host-exited");
      expect(types).not.toContain("runtime.fenced");
      // Recovery's plan after a planned stop names the stop, never an incident; a full drain left nothing to move.
      const plans = events.flatMap((s) => (s.event.type === "runtime.recovery-planned" ? [s.event.data] : []));
      for (const p of plans) {
        expect(isPlannedStopId(p.incidentId)).toBe(true);
        expect(p.items).toEqual([]);
      }
      const retired = events.find((s) => s.event.type === "runtime.retired")?.event;
      expect(retired?.type === "runtime.retired" && retired.data.stopped?.reason.code).toBe("host-stopped");
      expect(retired?.type === "runtime.retired" && retired.data.stopped?.proof).toMatchObject({
        kind: "pod-uid-gone",
        podUid,
        podName,
        namespace,
      });
      expect(retired?.type === "runtime.retired" && isPlannedStopId(retired.data.stopped?.stopId ?? "")).toBe(true);

      const log: StoredEvent[] = [];
      await store.replay({ seq: 1 }, (e) => {
        log.push(e);
      });
      for (const id of ids)
        expect(log.filter((e) => e.event.type === "run.completed" && e.event.correlationId === id)).toHaveLength(1);
      // No incident anywhere in this plane, and nothing moved.
      expect(log.filter((e) => e.event.type === "runtime.suspected")).toEqual([]);
      expect(log.filter((e) => e.event.type === "exec.resumed")).toEqual([]);
      // Nothing was dispatched to the deleted runtime after the runs it held at the delete.
      const dispatchedTo = (id: string) =>
        log.find((e) => e.event.type === "run.dispatched" && e.event.correlationId === id)?.event;
      for (const id of ids.slice(heldAtStop)) {
        const d = dispatchedTo(id);
        expect(d?.type === "run.dispatched" && d.data.runtimeInstanceId).not.toBe(target);
      }
    } finally {
      redis.disconnect();
    }
  }, 600_000);
});
