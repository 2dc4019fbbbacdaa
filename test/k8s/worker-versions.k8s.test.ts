import { randomBytes } from "node:crypto";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { DroverEvent } from "../../contracts/index.ts";
import { apiClient } from "../../platform/api-client.ts";
import { runCompleted } from "../support/run-completed.ts";
import { startControlPlane, type ControlPlane } from "../../platform/control-plane-processes.ts";
import { startFerret, startRedis, type RunningServer } from "../../platform/local-servers.ts";
import { connectHarness } from "../../platform/nats-auth/server-keys.ts";
import { createEventStore, runtimeRef, type StoredEvent } from "../../streams/index.ts";
import { eventually } from "../support/streams.ts";
import { clusterClients, freshNamespace } from "./support/cluster-client.ts";
import { digestReference, nodeContainerd, variantImage } from "./support/image-digests.ts";
import { runtimeHostConfig, startPodReachableNats } from "./support/runtime-pods.ts";
import { inject } from "vitest";
import { ofType, wholeLog } from "../support/log-events.ts";

const TOKEN = "token-k8s-wv-0000000001";
const OPERATOR = "token-k8s-wv-operator-01";
const TENANT = "t-kwv";
const LONG = 6;
const sleepDag = (ms: number) => ({ name: "kwv", steps: [{ id: "nap", kind: "sleep", params: { durationMs: ms } }] });
type Admitted = Extract<DroverEvent, { type: "run.admitted" }>;
type Registered = Extract<DroverEvent, { type: "runtime.registered" }>;

/**
 * Pinned worker versions on Kubernetes hosts (docs/worker-versions.md): a Pod's worker version is
 * the digest of the image it runs. Local cluster's real node (containerd + kubelet), every service
 * a real process on real nats-server, Redis and FerretDB. Version 1 is the tier's runtime image,
 * version 2 the same image with another config label (another manifest, another digest), both named
 * on the node by digest. Runs on a v1 Pod, v2 deployed (the provisioner restarted with the tenant's
 * `worker.image` at v2), the v1 Pod force-deleted: the runs resume only on a Pod of v1's image, new
 * runs go to a v2 Pod, and the v1 Pod started for the pinned runs retires when the last one ends.
 */
describe("worker versions on Kubernetes hosts: Pods versioned by image digest, pinned runs resume on their version, drained Pods retire (real node, all services real)", () => {
  const servers: RunningServer[] = [];
  let cp: ControlPlane;
  let namespace: string;
  let v1: { digest: string; ref: string };
  let v2: { digest: string; ref: string };
  const { core } = clusterClients();

  beforeAll(async () => {
    const node = nodeContainerd();
    v1 = await digestReference(node, inject("k8sImage"));
    v2 = await digestReference(node, await variantImage(node, `v2-${randomBytes(3).toString("hex")}`));
    servers.push(await startPodReachableNats(), await startRedis(), await startFerret());
    const [nats, redis, ferret] = servers as [RunningServer, RunningServer, RunningServer];
    namespace = await freshNamespace(core, "wversions");
    cp = await startControlPlane({
      natsUrl: nats.url,
      redisUrl: redis.url,
      mongoUrl: ferret.url,
      services: ["capacity", "recovery", "provisioner", "admission", "api"],
      config: {
        controlPlaneId: "cp-k8s-wv",
        heartbeatIntervalMs: 250,
        dispatchTimeoutMs: 3000,
        kubernetes: {
          kubeconfig: inject("k8sKubeconfig"),
          namespace,
          exposure: "pod-ip",
          namePrefix: `wv${randomBytes(2).toString("hex")}`,
          ...runtimeHostConfig(),
        },
        tenants: [
          {
            tenantId: TENANT,
            isolationMode: "dedicated",
            maxRuntimeInstances: 3,
            workersPerInstance: LONG,
            maxConcurrentRunsPerInstance: LONG,
            localQueueCapacity: LONG,
            hostProvider: "kubernetes",
            worker: { module: "examples/data-pipeline/worker.mjs", kinds: ["hash-records"], image: v1.ref },
          },
        ],
        tokens: {
          [TOKEN]: { role: "tenant", tenantId: TENANT },
          [OPERATOR]: { role: "operator", name: "k8s-wv" },
        },
      },
    });
  }, 180_000);
  afterAll(async () => {
    await cp?.stop();
    for (const s of servers) await s.stop();
  });

  const api = () => apiClient(cp.apiUrl, TOKEN);
  /** A runtime's Pod by the uid its `host-started` recorded (its incarnation). */
  const podOf = async (uid: string) => {
    const pod = (await core.listNamespacedPod({ namespace })).items.find((p) => p.metadata?.uid === uid);
    if (!pod) throw new Error(`no Pod with uid ${uid} in ${namespace}`);
    return pod;
  };
  const submit = async (ms: number) => {
    const r = await api().post("/v1/runs", { dag: sleepDag(ms), input: {} });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    return r.body.sharedRunId as string;
  };
  const completed = (id: string) => runCompleted(api, id, 240_000);

  it("runs on a v1 Pod, v2 deployed, the Pod force-deleted: resumed runs stay on v1's image, new runs start on v2's, the pinned v1 Pod retires after its last run", async () => {
    const nc = await connectHarness({ servers: servers[0]!.url });
    try {
      const store = createEventStore(nc, cp.layout);
      const log = () => wholeLog(store);
      const idOf = (es: readonly StoredEvent[], e: DroverEvent) =>
        es
          .find((s) => s.event === e)!
          .subject.split(".")
          .at(-2)!;

      const long = await Promise.all(Array.from({ length: LONG }, () => submit(20_000)));
      const first = await eventually(
        `${LONG} runs started on one Pod`,
        async () => {
          const started = ofType(await log(), "run.started");
          return started.length >= LONG ? started[0]!.data.runtimeInstanceId : undefined;
        },
        150_000,
      );
      const firstEvents = (await store.read(runtimeRef(first))).events;
      const reg = ofType(firstEvents, "runtime.registered")[0]!;
      expect(reg.data.worker).toMatchObject({ version: v1.digest, image: v1.ref, pinned: false });

      // Deploy v2: the provisioner restarted with the tenant's worker image at v2 (its Pods outlive it).
      const configPath = join(cp.logDir, "drover.json");
      const config = JSON.parse(await readFile(configPath, "utf8"));
      config.tenants[0].worker.image = v2.ref;
      await writeFile(configPath, JSON.stringify(config));
      await cp.kill("provisioner");
      await cp.restart("provisioner");
      // The v1 Pod dies with its runs in flight: deleted at once, no grace.
      const host = ofType(firstEvents, "runtime.host-started")[0]!;
      await core.deleteNamespacedPod({
        namespace,
        name: (await podOf(host.data.hostIncarnation.replace(/^pod:/, ""))).metadata!.name!,
        body: { gracePeriodSeconds: 0, preconditions: { uid: host.data.podUid! } },
      });
      const fresh = await Promise.all(Array.from({ length: 3 }, () => submit(200)));

      const t0 = Date.now();
      await Promise.all([...long, ...fresh].map(completed));
      const settledMs = Date.now() - t0;

      const es = await log();
      const registered = ofType(es, "runtime.registered").filter((r) => r.data.tenantId === TENANT);
      const byVersion = (v: string) => registered.filter((r) => r.data.worker?.version === v);
      // Every Pod registered the image it runs, named by the digest that is its version.
      for (const r of registered)
        expect(r.data.worker?.image).toBe(`${r.data.worker!.image!.split("@")[0]}@sha256:${r.data.worker!.version}`);
      const pinnedV1 = byVersion(v1.digest).filter((r) => r.data.worker!.pinned);
      expect(pinnedV1.length).toBeGreaterThanOrEqual(1);
      for (const r of pinnedV1) expect(r.data.worker!.image).toBe(v1.ref);
      expect(byVersion(v2.digest).filter((r) => !r.data.worker!.pinned).length).toBeGreaterThanOrEqual(1);

      const admittedOf = (id: string) =>
        es.filter((e) => e.event.type === "run.admitted" && e.event.correlationId === id);
      const startedOn = (id: string) =>
        es
          .filter((e) => e.event.type === "run.started" && e.event.correlationId === id)
          .map(
            (st) =>
              (
                admittedOf(id)
                  .filter((a) => a.seq < st.seq)
                  .at(-1)!.event as Admitted
              ).data.workerVersion,
          );
      for (const id of long) {
        const versions = admittedOf(id).map((a) => (a.event as Admitted).data.workerVersion);
        expect(versions.length, id).toBeGreaterThanOrEqual(2); // placed again after the Pod died
        expect(new Set(versions), id).toEqual(new Set([v1.digest]));
      }
      // A new run admitted before recovery fenced the dead Pod may have been placed there; it starts on v2 only.
      for (const id of fresh) expect(new Set(startedOn(id)), id).toEqual(new Set([v2.digest]));

      // The v2 Pod runs v2's image: the kubelet resolved the digest reference to that image.
      const v2Reg = byVersion(v2.digest).find((r) => !r.data.worker!.pinned)! as Registered;
      const v2Host = ofType((await store.read(runtimeRef(idOf(es, v2Reg)))).events, "runtime.host-started")[0]!;
      const v2Pod = await podOf(v2Host.data.hostIncarnation.replace(/^pod:/, ""));
      expect(v2Pod.spec?.containers[0]?.image).toBe(v2.ref);
      expect(v2Pod.status?.containerStatuses?.[0]?.imageID).toContain(v2.digest);

      // The pinned v1 Pod retires as drained once its last run ended; the v2 Pod stays.
      const pinnedIds = pinnedV1.map((r) => idOf(es, r));
      const retired = await eventually(
        "the pinned v1 Pods retired as drained",
        async () => {
          const all = await log();
          const rs = pinnedIds.map((id) =>
            all.find((e) => e.event.type === "runtime.retired" && e.subject.split(".").at(-2) === id),
          );
          return rs.every((x) => x !== undefined) ? rs : undefined;
        },
        90_000,
      );
      const lastEnd = Math.max(
        ...es.filter((e) => e.event.type === "run.completed" && long.includes(e.event.correlationId)).map((e) => e.seq),
      );
      for (const r of retired) {
        const data = (r!.event as Extract<DroverEvent, { type: "runtime.retired" }>).data;
        expect(data.reason).toContain("drained");
        expect(data.stopped?.proof.kind).toBe("pod-uid-gone");
        expect(r!.seq).toBeGreaterThan(lastEnd);
      }
      const retiredAfterMs = Math.max(...retired.map((r) => r!.time.getTime())) - t0 - settledMs;
      const rows = (await apiClient(cp.apiUrl, OPERATOR).get("/v1/runtimes")).body.runtimes as {
        status: string;
        worker: { version: string; draining: boolean; pinnedRuns: number } | null;
      }[];
      const live = rows.filter((r) => r.worker && r.status !== "retired" && r.status !== "fenced");
      expect(live.map((r) => [r.worker!.version, r.worker!.draining])).toEqual(live.map(() => [v2.digest, false]));
      console.log(
        `k8s worker versions: ${LONG} resumed on v1 and 3 new on v2 settled ${settledMs} ms after the Pod was deleted; ` +
          `pinned v1 Pods ${pinnedV1.length}, v2 Pods ${byVersion(v2.digest).length}; retired ~${retiredAfterMs} ms after the runs settled`,
      );
    } finally {
      await nc.close();
    }
  });
});
