import { CoreV1Api, CustomObjectsApi } from "@kubernetes/client-node";
import { DroverError, type ErrorCode, type ReadinessLayer } from "../../../contracts/index.ts";
import { systemClock } from "../../clock.ts";
import { LifecycleGate } from "../lifecycle-gate.ts";
import { identityKey } from "../runtime-env.ts";
import type {
  HostEndpoint,
  HostFacts,
  HostObservation,
  HostSpec,
  HostStartResult,
  HostStrategy,
  KillResult,
  WarmPoolHost,
} from "../types.ts";
import { exposeThroughGateway } from "./gateway-exposure.ts";
import { allocatedNodePort, exposeThroughNodePort } from "./node-port-exposure.ts";
import { readyDecision } from "./pod-decisions.ts";
import { killPodExact, podTarget } from "./pod-kill.ts";
import { observeRuntimePods } from "./pod-observer.ts";
import { poolMethods, type PoolContext, type PoolMember } from "./pool-members.ts";
import { ensureObject, type Ensured, type Obj } from "./resources.ts";
import { GATEWAY_API, routeVerdict } from "./routes.ts";
import {
  buildRuntimePod,
  buildRuntimeService,
  buildTokenSecret,
  RUNTIME_PORT,
  runtimeMetadata,
  runtimeNames,
} from "./spec.ts";
import { exposeThroughPortForward } from "./port-forward-exposure.ts";
import type { KubernetesStrategyOptions, Running } from "./strategy-types.ts";
import { cleanupOwned, removeRuntimeObjects, type OwnedObject } from "./owned-objects.ts";
import { followObject } from "./watch-object.ts";

export type { KubernetesStrategyOptions } from "./strategy-types.ts";

const CLEANUP_BUDGET_MS = 15_000;

/** `Kind:namespace/name:uid` of each object a start created, as HostStartResult reports them. */
const ownedRefs = (owned: readonly OwnedObject[]): string[] =>
  owned.map((o) => `${o.kind}:${o.namespace}/${o.name}:${o.uid}`);

/** `pod:<uid>` → uid. */
export function parsePodIncarnation(incarnation: string): string | undefined {
  const m = /^pod:([a-z0-9-]{1,63})$/.exec(incarnation);
  return m?.[1];
}

/**
 * The Kubernetes host strategy (hosts.md "Kubernetes strategy"): a runtime is a Secret (its command
 * token), a Pod and a per-runtime Service, plus an HTTPRoute/GRPCRoute on a shared Gateway for
 * `gateway` exposure or a second, `type: NodePort` Service for `node-port` exposure. Proves
 * `resource` (created, or adopted after the identity check), `host` (the exact Pod UID Ready=True),
 * `endpoint` (Pod IP) and `route`: for `gateway`, route accepted, Gateway programmed and
 * GetQueueStatus through it answered by this runtime; for `node-port`, the NodePort Service created
 * after Ready, its node port allocated and GetQueueStatus at `<node address>:<nodePort>` answered by
 * this runtime; for `port-forward`, a local listener in this process (one `pods/portforward` tunnel
 * per connection, port-forward-exposure.ts) and GetQueueStatus through it answered by this runtime:
 * the listener's address is the endpoint, closed by the kill before the Pod is deleted, and by
 * itself once a failed tunnel shows the Pod UID gone. The caller still proves
 * `command` (through the published endpoint, so through the forward). A duplicate start converges (`lifecycle-cache` within this strategy, `existing-pod`
 * across replicas). A failed start deletes exactly the objects it created (by UID) and nothing
 * else. Kubernetes performs no execution recovery: nothing here restarts a runtime.
 */
export function createKubernetesStrategy(opts: KubernetesStrategyOptions): HostStrategy & WarmPoolHost {
  const kc = opts.kubeconfig;
  const core = kc.makeApiClient(CoreV1Api);
  const custom = kc.makeApiClient(CustomObjectsApi);
  const ns = opts.namespace;
  const prefix = opts.namePrefix ?? "drover-rt";
  const exposure = opts.exposure ?? "pod-ip";
  const gate = new LifecycleGate();
  const running = new Map<string, Running>();
  const stops = new Set<() => void>();
  const clock = opts.clock ?? systemClock;
  const members = new Map<string, PoolMember>();
  const pool: PoolContext = { kc, core, custom, opts, clock };
  if (exposure === "gateway" && !opts.gateway)
    throw new DroverError("host-config-missing", "gateway exposure needs opts.gateway (the shared Gateway)");

  const rejected = (
    code: ErrorCode,
    detail: string,
    layer: ReadinessLayer,
    owned: readonly OwnedObject[],
  ): HostStartResult => ({
    outcome: "rejected",
    reason: { code, detail: detail.slice(0, 2000) },
    layer,
    owned: ownedRefs(owned),
  });

  async function revalidate(rec: Running, spec: HostSpec): Promise<HostStartResult> {
    if (rec.identity !== identityKey(spec))
      return rejected(
        "host-identity-collision",
        `runtime ${spec.runtimeInstanceId} already has a Pod started with another identity or sizing`,
        "resource",
        [],
      );
    const uid = rec.host.podUid ?? "";
    const r = await followObject(
      kc,
      podTarget(core, ns, rec.host.podName ?? ""),
      (e) => readyDecision(uid, e) ?? { ok: false as const, detail: `pod ${uid} is no longer Ready` },
      clock.now().getTime() + 10_000,
    );
    if ("timeout" in r || !r.ok)
      return rejected(
        "pod-deleted",
        `runtime ${spec.runtimeInstanceId}: ${"timeout" in r ? "pod not readable" : r.detail}; a RuntimeInstanceId never gets a second host`,
        "host",
        [],
      );
    const route = rec.endpoint.route;
    if (route && opts.gateway) {
      // The route is revalidated too: a converged start is only as good as the path to the runtime.
      const plural = route.kind === "GRPCRoute" ? "grpcroutes" : "httproutes";
      const obj: unknown = await custom
        .getNamespacedCustomObject({ ...GATEWAY_API, namespace: route.namespace, plural, name: route.name })
        .catch(() => undefined);
      const v = obj
        ? routeVerdict(obj as Parameters<typeof routeVerdict>[0], opts.gateway)
        : { state: "refused" as const, detail: "route is gone" };
      if (v.state !== "ready")
        return rejected(
          "route-not-accepted",
          `runtime ${spec.runtimeInstanceId}: ${route.kind} ${route.name}: ${v.detail}`,
          "route",
          [],
        );
    }
    if (rec.forward?.closed())
      return rejected(
        "endpoint-resolution-failed",
        `runtime ${spec.runtimeInstanceId}: its port-forward listener ${rec.endpoint.endpoint} is closed`,
        "route",
        [],
      );
    const np = rec.nodePortService;
    if (np) {
      // The same Service (UID) with the same node port, or the published endpoint no longer leads here.
      const svc = await core.readNamespacedService({ namespace: ns, name: np.name }).catch(() => undefined);
      if (svc?.metadata?.uid !== np.uid || allocatedNodePort(svc) !== np.nodePort) {
        return rejected(
          "endpoint-resolution-failed",
          `runtime ${spec.runtimeInstanceId}: NodePort Service ${np.name} uid ${np.uid} port ${np.nodePort} is ${svc ? `now uid ${svc.metadata?.uid} port ${allocatedNodePort(svc)}` : "gone"}`,
          "route",
          [],
        );
      }
    }
    return {
      outcome: "converged",
      convergenceSource: "lifecycle-cache",
      host: rec.host,
      endpoint: rec.endpoint,
      layersPassed: rec.layers,
      owned: [],
    };
  }

  async function startFresh(
    spec: HostSpec,
    signal?: AbortSignal,
    onHostCreated?: (host: HostFacts) => Promise<void>,
  ): Promise<HostStartResult> {
    const names = runtimeNames(prefix, spec.runtimeInstanceId);
    const meta = runtimeMetadata(spec, opts.provider);
    const owned: OwnedObject[] = [];
    const fail = async (code: ErrorCode, detail: string, layer: ReadinessLayer): Promise<HostStartResult> => {
      const problems = await cleanupOwned(kc, core, custom, owned, CLEANUP_BUDGET_MS);
      return rejected(code, problems ? `${detail}; cleanup: ${problems}` : detail, layer, owned);
    };
    /** Creates the object, or reads and adopts ours (identity checked); records what it created for clean-up. */
    const ensureOwned = async <T extends Obj>(
      kind: OwnedObject["kind"],
      name: string,
      create: () => Promise<T>,
      read: () => Promise<T>,
    ): Promise<Ensured<T>> => {
      const r = await ensureObject(`${kind} ${ns}/${name}`, meta, create, read);
      if (r.kind === "created") owned.push({ kind, namespace: ns, name, uid: r.uid });
      return r;
    };
    const secret = await ensureOwned(
      "Secret",
      names.secret,
      () => core.createNamespacedSecret({ namespace: ns, body: buildTokenSecret(spec, opts) }),
      () => core.readNamespacedSecret({ namespace: ns, name: names.secret }),
    );
    if (secret.kind === "failed") return fail(secret.code, secret.detail, "resource");
    const pod = await ensureOwned(
      "Pod",
      names.pod,
      () =>
        core.createNamespacedPod({
          namespace: ns,
          body: buildRuntimePod(spec, { ...opts, bindAllAddresses: exposure === "port-forward" }),
        }),
      () => core.readNamespacedPod({ namespace: ns, name: names.pod }),
    );
    if (pod.kind === "failed") return fail(pod.code, pod.detail, "resource");
    let host: HostFacts = { hostIncarnation: `pod:${pod.uid}`, podUid: pod.uid, podName: names.pod, namespace: ns };
    if (pod.kind === "created" && onHostCreated) {
      try {
        await onHostCreated(host);
      } catch (e) {
        await cleanupOwned(kc, core, custom, owned, CLEANUP_BUDGET_MS);
        throw e;
      }
    }
    const svc = await ensureOwned(
      "Service",
      names.service,
      () => core.createNamespacedService({ namespace: ns, body: buildRuntimeService(spec, opts) }),
      () => core.readNamespacedService({ namespace: ns, name: names.service }),
    );
    if (svc.kind === "failed") return fail(svc.code, svc.detail, "resource");
    let ready;
    try {
      ready = await followObject(
        kc,
        podTarget(core, ns, names.pod),
        (e) => readyDecision(pod.uid, e),
        clock.now().getTime() + (opts.readinessTimeoutMs ?? 60_000),
        signal,
      );
    } catch (e) {
      return fail("pod-readiness-timeout", `watching pod ${ns}/${names.pod}: ${String(e)}`, "host");
    }
    if ("timeout" in ready)
      return fail(
        signal?.aborted ? "host-creation-failed" : "pod-readiness-timeout",
        `pod ${ns}/${names.pod} uid ${pod.uid} not Ready in time${signal?.aborted ? " (aborted)" : ""}`,
        "host",
      );
    if (!ready.ok) return fail("pod-failed", ready.detail, "host");
    host = { ...host, ...(ready.pod.spec?.nodeName ? { node: ready.pod.spec.nodeName } : {}) };
    const podIP = ready.pod.status?.podIP;
    if (!podIP)
      return fail("endpoint-resolution-failed", `pod ${ns}/${names.pod} is Ready without a podIP`, "endpoint");
    const direct = `${podIP}:${RUNTIME_PORT[spec.transport]}`;
    let endpoint: HostEndpoint = { endpoint: spec.transport === "http" ? `http://${direct}` : direct, aliases: [] };
    const layers: ReadinessLayer[] = ["resource", "host", "endpoint"];
    if (exposure === "gateway" && opts.gateway) {
      const ex = await exposeThroughGateway(
        kc,
        custom,
        spec,
        opts,
        opts.gateway,
        clock.now().getTime() + (opts.routeTimeoutMs ?? 30_000),
        signal,
      );
      if (ex.created && ex.routeUid)
        owned.push({
          kind: spec.transport === "grpc" ? "GRPCRoute" : "HTTPRoute",
          namespace: ns,
          name: names.route,
          uid: ex.routeUid,
        });
      if (!ex.ok) return fail(ex.code, ex.detail, "route");
      endpoint = { endpoint: ex.endpoint, aliases: [endpoint.endpoint], route: ex.route };
      layers.push("route");
    }
    let nodePortService: Running["nodePortService"];
    if (exposure === "node-port") {
      const nodeAddress = opts.nodeAddress ?? ready.pod.status?.hostIP ?? "127.0.0.1";
      const ex = await exposeThroughNodePort(
        core,
        spec,
        opts,
        nodeAddress,
        clock.now().getTime() + (opts.routeTimeoutMs ?? 30_000),
        signal,
      );
      if (ex.created && ex.serviceUid)
        owned.push({ kind: "Service", namespace: ns, name: names.nodePort, uid: ex.serviceUid });
      if (!ex.ok) return fail(ex.code, ex.detail, "route");
      endpoint = { endpoint: ex.endpoint, aliases: [endpoint.endpoint] };
      nodePortService = { name: names.nodePort, uid: ex.serviceUid, nodePort: ex.nodePort };
      layers.push("route");
    }
    let forward: Running["forward"];
    if (exposure === "port-forward") {
      const ex = await exposeThroughPortForward(
        kc,
        core,
        spec,
        ns,
        { name: names.pod, uid: pod.uid },
        opts.forwardAddress ?? "127.0.0.1",
        clock.now().getTime() + (opts.routeTimeoutMs ?? 30_000),
        signal,
      );
      if (!ex.ok) return fail(ex.code, ex.detail, "route");
      endpoint = { endpoint: ex.endpoint, aliases: [endpoint.endpoint] };
      forward = ex.forward;
      layers.push("route");
    }
    running.set(spec.runtimeInstanceId, {
      identity: identityKey(spec),
      host,
      endpoint,
      layers,
      ...(nodePortService ? { nodePortService } : {}),
      ...(forward ? { forward } : {}),
    });
    return pod.kind === "created"
      ? {
          outcome: "created",
          host,
          endpoint,
          layersPassed: layers,
          owned: ownedRefs(owned),
        }
      : {
          outcome: "converged",
          convergenceSource: "existing-pod",
          host,
          endpoint,
          layersPassed: layers,
          owned: ownedRefs(owned),
        };
  }

  return {
    provider: "kubernetes",
    start(spec, signal, onHostCreated) {
      return gate.run(spec.runtimeInstanceId, () => {
        const rec = running.get(spec.runtimeInstanceId);
        return rec ? revalidate(rec, spec) : startFresh(spec, signal, onHostCreated);
      });
    },
    kill(runtimeInstanceId, host, budgetMs, hints): Promise<KillResult> {
      const uid = parsePodIncarnation(host.hostIncarnation);
      if (!uid)
        return Promise.reject(new DroverError("host-spec-invalid", `${host.hostIncarnation} is not a pod incarnation`));
      const t0 = Date.now();
      return gate.run(runtimeInstanceId, async () => {
        const gateMs = Date.now() - t0;
        // The forward goes first: from the fence on, nothing reaches this runtime through us.
        await running.get(runtimeInstanceId)?.forward?.close();
        running.delete(runtimeInstanceId);
        const names = runtimeNames(prefix, runtimeInstanceId);
        const namespace = host.namespace ?? ns;
        // A bound pool member's Pod carries the member's name, not the runtime's.
        const member = [...members.values()].find((m) => m.host.hostIncarnation === host.hostIncarnation);
        // The Service, route and Secret carry no execution: best effort, they go side by side with the
        // Pod's termination (one path fewer to a runtime that never serves again), not after its UID is
        // gone — in turn, their reads and deletes added 0.6–2.7 s to every fence of a P=5 proof at load ~20.
        const podName = host.podName ?? member?.host.podName ?? names.pod;
        // A bound pool member's Pod (its name is the member's) never had objects named for this
        // runtime: a binding creates none (pool-members.ts), and the member's token Secret is owned
        // by its Pod. Their five reads, side by side with the Pod's read, only delayed it.
        const bound = podName !== names.pod;
        const podAt = Date.now() - t0;
        const [result, objectsMs] = await Promise.all([
          killPodExact(kc, core, namespace, podName, uid, opts.killGraceSeconds ?? 1, budgetMs, hints?.exitEvidence),
          bound
            ? undefined
            : removeRuntimeObjects(core, custom, namespace, runtimeInstanceId, names)
                .catch(() => undefined)
                .then(() => Date.now() - t0),
        ]);
        // ms from the call: the per-runtime gate, then the Pod's steps, the other objects' removal.
        const pod = Object.entries(result.timingsMs ?? {}).map(([k, v]) => [k, v + podAt] as const);
        return {
          ...result,
          timingsMs: { gate: gateMs, ...Object.fromEntries(pod), ...(objectsMs ? { objects: objectsMs } : {}) },
        };
      });
    },
    observe(onFact: (fact: HostObservation) => void) {
      const stop = observeRuntimePods(kc, core, ns, onFact);
      stops.add(stop);
      return () => {
        stop();
        stops.delete(stop);
      };
    },
    async close() {
      for (const stop of stops) stop();
      stops.clear();
      await Promise.all([...running.values()].map((r) => r.forward?.close()));
    },
    ...poolMethods(pool, gate, exposure, members, {
      taken: (id) => running.has(id),
      bound: (spec, host, endpoint, layers) =>
        running.set(spec.runtimeInstanceId, { identity: identityKey(spec), host, endpoint, layers }),
    }),
  };
}
