import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { CoreV1Api, KubeConfig } from "@kubernetes/client-node";
import type { DroverEvent, HostProvider } from "../../contracts/index.ts";
import { BOUND_TO } from "../../platform/hosts/kubernetes/pool-spec.ts";
import { createKubernetesStrategy } from "../../platform/hosts/kubernetes/strategy.ts";
import type { HostStrategy, WarmPoolHost } from "../../platform/hosts/types.ts";
import type { RunningServer } from "../../platform/local-servers.ts";
import { closeRuntimeClients } from "../../platform/runtime-client.ts";
import { claimableMembers, RosterView } from "../../services/provisioner/index.ts";
import { uniqueName } from "../support/isolation.ts";
import { firstSlotOf, provisionerFixture, type ProvisionerFixture } from "../support/provisioner-fixture.ts";
import { eventually } from "../support/streams.ts";
import { clusterClients, freshNamespace } from "./support/cluster-client.ts";
import { runtimePodOptions, startPodReachableNats } from "./support/runtime-pods.ts";

// Warm pools of runtime Pods on the local cluster's real node (upstream kubelet, containerd, runc):
// real nats-server on the Pod network, the real provisioner and Kubernetes strategy, the runtime image.
let kc: KubeConfig;
let core: CoreV1Api;
let ns: string;
let nats: RunningServer;
let f: ProvisionerFixture;
const strategies: HostStrategy[] = [];

beforeAll(async () => {
  ({ kc, core } = clusterClients());
  ns = await freshNamespace(core, "warm");
  nats = await startPodReachableNats();
  f = await provisionerFixture(nats.url);
}, 120_000);
afterAll(async () => {
  closeRuntimeClients();
  await f?.close();
  await Promise.all(strategies.map((s) => s.close()));
  await core?.deleteNamespace({ name: ns, body: { gracePeriodSeconds: 0 } }).catch(() => undefined);
  await nats?.stop();
}, 120_000);

type Events = readonly { event: DroverEvent; time: Date }[];
const types = (events: Events) => events.map((s) => s.event.type);
const fulfilled = (events: Events) => {
  const e = events.find((s) => s.event.type === "scaleout.fulfilled")?.event;
  return e?.type === "scaleout.fulfilled" ? (e.data.runtimeInstanceId as string) : undefined;
};
const started = (events: Events) => {
  const e = events.find((s) => s.event.type === "runtime.host-started")?.event;
  return e?.type === "runtime.host-started" ? e.data : undefined;
};

function k8sProvisioner(poolSize: number, controlPlaneId: string) {
  const strategy = createKubernetesStrategy({ kubeconfig: kc, namespace: ns, ...runtimePodOptions() });
  strategies.push(strategy);
  const { provisioner } = f.provisioner({
    strategies: new Map<HostProvider, HostStrategy>([["kubernetes", strategy]]),
    poolSizes: { kubernetes: poolSize },
    controlPlaneId,
    probeBudgetMs: 30_000,
  });
  return { provisioner, strategy };
}
const ready = (n: number, strategy: WarmPoolHost) =>
  eventually(
    `${n} ready pool members`,
    async () => {
      const all = claimableMembers(await new RosterView(f.store, f.streams.layout).current(), "kubernetes");
      const m = all.filter((x) => strategy.canBind(x.runtimeInstanceId));
      return m.length >= n ? m : undefined;
    },
    120_000,
  );
/** One scale-out of `tenantId` on Kubernetes hosts: its runtime's events and request → capacity-published in ms. */
async function scaleOut(provisioner: { handle(e: never): Promise<void> }, tenantId: string, cp: string) {
  const requested = await f.request(tenantId, cp, {}, { providerHint: "kubernetes" });
  await provisioner.handle(requested as never);
  const id = fulfilled(await f.settled(tenantId, requested.event.correlationId));
  if (!id) throw new Error(`scale-out of ${tenantId} was not fulfilled`);
  const rt = await f.runtimeEvents(id);
  return { id, rt, ms: rt.at(-1)!.time.getTime() - requested.time.getTime() };
}
const pct = (xs: number[], q: number) =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(q * xs.length))];

describe("warm pool with Kubernetes hosts (real node, real runtime Pods)", () => {
  it("serves scale-outs from the pool (claim, bind over the Pod IP to the exact Pod UID, command proven again, capacity) and refills it; pool size 0 cold-starts", async () => {
    const cp = uniqueName("cp");
    const SAMPLES = Number(process.env.WARM_POOL_SAMPLES ?? 3);
    const coldP = k8sProvisioner(0, cp).provisioner;
    const cold: number[] = [];
    for (let i = 0; i < SAMPLES; i++) {
      const c = await scaleOut(coldP, `tenant-cold${i}`, cp);
      expect(started(c.rt)?.convergence).toBe("created");
      cold.push(c.ms);
    }

    const { provisioner, strategy } = k8sProvisioner(2, cp);
    provisioner.pool.refill();
    const members = await ready(2, strategy);
    // Tenant-neutral: no identity, tenant, command token, NATS credential or tenant Secret in the member's Pod.
    const memberPod = await core.readNamespacedPod({ namespace: ns, name: members[0]!.pod!.podName });
    const env = memberPod.spec!.containers[0]!.env!.map((e) => e.name);
    for (const v of [
      "DROVER_RUNTIME_INSTANCE_ID",
      "DROVER_TENANT_ID",
      "DROVER_COMMAND_TOKEN",
      "NATS_CREDS",
      "NATS_URL",
    ])
      expect(env).not.toContain(v);
    expect(env).toContain("DROVER_POOL_TOKEN");
    expect(Object.keys(memberPod.metadata!.labels!)).not.toContain("drover.dev/tenant-id");

    const warm: number[] = [];
    for (let i = 0; i < SAMPLES; i++) {
      await ready(2, strategy);
      const w = await scaleOut(provisioner, `tenant-warm${i}`, cp);
      expect(types(w.rt)).toEqual([
        "runtime.registered",
        "runtime.host-start-requested",
        "runtime.host-started",
        "runtime.readiness-layer-passed",
        "runtime.readiness-layer-passed",
        "runtime.readiness-layer-passed",
        "runtime.readiness-layer-passed",
        "runtime.endpoint-published",
        "runtime.capacity-published",
      ]);
      const host = started(w.rt)!;
      expect(host.convergenceSource).toMatch(/^warm-pool:pool-[a-z0-9]{12}$/);
      const memberId = host.convergenceSource!.slice("warm-pool:".length);
      expect(types(await f.runtimeEvents(memberId))).toContain("runtime.pool-member-claimed");
      // The member's resource layer (its Pod, the UID host-started names) comes with its claim; the
      // bind proves host and endpoint, the probe command, each of that incarnation.
      const layers = w.rt.flatMap((s) => (s.event.type === "runtime.readiness-layer-passed" ? [s.event.data] : []));
      expect(layers.map((l) => l.layer)).toEqual(["resource", "host", "endpoint", "command"]);
      for (const l of layers) expect(l.hostIncarnation).toBe(host.hostIncarnation);
      expect(layers[0]!.detail).toContain(`warm pool member ${memberId}: resource proven at its readiness`);
      expect(layers[1]!.detail).not.toContain("proven at its readiness");
      // The host is the member's exact Pod, now annotated with the runtime it serves.
      const pod = await core.readNamespacedPod({ namespace: ns, name: host.podName! });
      expect(`pod:${pod.metadata?.uid}`).toBe(host.hostIncarnation);
      expect(pod.metadata?.annotations?.[BOUND_TO]).toBe(w.id);
      warm.push(w.ms);
    }
    const refilled = await ready(2, strategy);
    expect(refilled).toHaveLength(2);
    console.log(
      `[warm-pool k8s] request→capacity-published over ${SAMPLES}: cold p50 ${pct(cold, 0.5)} / max ${Math.max(...cold)} ms (${cold.join(", ")}); warm p50 ${pct(warm, 0.5)} / max ${Math.max(...warm)} ms (${warm.join(", ")})`,
    );
  }, 600_000);

  it("two concurrent claims of the one ready member: exactly one wins", async () => {
    const cp = uniqueName("cp");
    const { provisioner, strategy } = k8sProvisioner(1, cp);
    provisioner.pool.refill();
    await ready(1, strategy);
    const reg = (tenantId: string, suffix: string) => ({
      runtimeInstanceId: `rt-${tenantId}-${suffix}`,
      registration: {
        controlPlaneId: cp,
        tenantId,
        isolationMode: "dedicated",
        allowSharedFallback: false,
        pool: "default",
        hostProvider: "kubernetes",
        transport: "http",
        sizing: { workers: 1, maxConcurrentRuns: 1, localQueueCapacity: 2, maxWorkersPerRun: 1 },
        requiredLayers: ["resource", "host", "endpoint", "command"],
        scaleOutRequestId: uniqueName("so"),
      },
      origin: { instanceId: "test", correlationId: "c", causationId: "c", tenantId },
    });
    const claims = await Promise.all([
      provisioner.pool.claim(reg("race-a", "aaaaaaaaaaaa") as never, firstSlotOf("race-a")),
      provisioner.pool.claim(reg("race-b", "bbbbbbbbbbbb") as never, firstSlotOf("race-b")),
    ]);
    expect(claims.filter((c) => c !== undefined)).toHaveLength(1);
    const winner = claims.find((c) => c !== undefined)!;
    expect(
      types(await f.runtimeEvents(winner.warm!.memberId)).filter((t) => t === "runtime.pool-member-claimed"),
    ).toHaveLength(1);
    const loserId = claims[0] ? "rt-race-b-bbbbbbbbbbbb" : "rt-race-a-aaaaaaaaaaaa";
    expect(await f.runtimeEvents(loserId)).toEqual([]);
  }, 300_000);

  it("a member Pod deleted before any claim never gets capacity, is never claimable, and is replaced in the pool", async () => {
    const cp = uniqueName("cp");
    const { provisioner, strategy } = k8sProvisioner(1, cp);
    provisioner.pool.refill();
    const [victim] = await ready(1, strategy);
    await core.deleteNamespacedPod({
      namespace: ns,
      name: victim!.pod!.podName,
      body: { gracePeriodSeconds: 0, preconditions: { uid: victim!.pod!.podUid } },
    });
    await eventually(
      "host-exited recorded",
      async () =>
        types(await f.runtimeEvents(victim!.runtimeInstanceId)).includes("runtime.host-exited") ? true : undefined,
      60_000,
    );
    const replacement = await ready(1, strategy);
    expect(replacement.map((m) => m.runtimeInstanceId)).not.toContain(victim!.runtimeInstanceId);
    const w = await scaleOut(provisioner, "tenant-after-kill", cp);
    expect(started(w.rt)?.convergenceSource).not.toBe(`warm-pool:${victim!.runtimeInstanceId}`);
    expect(types(await f.runtimeEvents(victim!.runtimeInstanceId))).not.toContain("runtime.capacity-published");
  }, 300_000);

  it("a restarted provisioner binds the member Pods its predecessor left: its pool counts them, starts none, and serves a scale-out from one", async () => {
    const cp = uniqueName("cp");
    const first = k8sProvisioner(1, cp);
    first.provisioner.pool.refill();
    const [left] = await ready(1, first.strategy);
    // The predecessor is gone (a SIGKILL, a rollout): a new provisioner with a new strategy, same control plane.
    const second = k8sProvisioner(1, cp);
    expect(second.strategy.canBind(left!.runtimeInstanceId)).toBe(false);
    second.provisioner.pool.refill();
    await second.provisioner.pool.idle();
    const members = claimableMembers(await new RosterView(f.store, f.streams.layout).current(), "kubernetes", cp);
    expect(members.map((m) => m.runtimeInstanceId)).toEqual([left!.runtimeInstanceId]);
    const w = await scaleOut(second.provisioner, "tenant-successor", cp);
    const host = started(w.rt)!;
    expect(host.convergenceSource).toBe(`warm-pool:${left!.runtimeInstanceId}`);
    expect(types(w.rt).at(-1)).toBe("runtime.capacity-published");
    const pod = await core.readNamespacedPod({ namespace: ns, name: left!.pod!.podName });
    expect(`pod:${pod.metadata?.uid}`).toBe(host.hostIncarnation);
    expect(pod.metadata?.annotations?.[BOUND_TO]).toBe(w.id);
  }, 300_000);
});
