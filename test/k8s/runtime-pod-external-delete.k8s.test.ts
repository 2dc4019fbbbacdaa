import { randomBytes } from "node:crypto";
import { type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import type { z } from "zod";
import type { KubernetesHostConfig } from "../../contracts/index.ts";
import { startControlPlane, type ControlPlane } from "../../platform/control-plane-processes.ts";
import { startRedis, type RunningServer } from "../../platform/local-servers.ts";
import { connectHarness } from "../../platform/nats-auth/server-keys.ts";
import { stopFromOutside } from "../support/external-stop.ts";
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
    const plane = { nc, cp: cp!, controlPlaneId: CP, redisUrl: redisServer.url, tenant: TENANT, token: TOKEN };
    let pod: { podName?: string; podUid?: string } = {};
    const { retired } = await stopFromOutside(plane, async (host) => {
      if (!host.podName || !host.podUid) throw new Error("no Pod for the runtime");
      pod = host;
      // What `kubectl delete pod` sends: a DELETE with the Pod's own grace period (~3 s runs: well inside its 30 s).
      await core.deleteNamespacedPod({ namespace, name: host.podName });
    });
    expect(retired.stopped?.proof).toMatchObject({
      kind: "pod-uid-gone",
      podUid: pod.podUid,
      podName: pod.podName,
      namespace,
    });
  }, 600_000);
});
