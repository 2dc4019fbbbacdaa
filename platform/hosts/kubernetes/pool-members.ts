import {
  PatchStrategy,
  setHeaderOptions,
  type CoreV1Api,
  type CustomObjectsApi,
  type KubeConfig,
} from "@kubernetes/client-node";
import type { ErrorCode, ReadinessLayer } from "../../../contracts/index.ts";
import type { Clock } from "../../clock.ts";
import { bindingEnv, postBinding } from "../pool-binding.ts";
import type { LifecycleGate } from "../lifecycle-gate.ts";
import type { HostEndpoint, HostFacts, HostSpec, HostStartResult, WarmPoolHost } from "../types.ts";
import { apiFailure } from "./api-errors.ts";
import { cleanupOwned, type OwnedObject } from "./owned-objects.ts";
import { readyDecision } from "./pod-decisions.ts";
import { killPodExact, podTarget } from "./pod-kill.ts";
import { BOUND_TO, buildPoolMemberPod, buildPoolTokenSecret, DEFAULT_POOL_CPU_LIMIT } from "./pool-spec.ts";
import { labelValue } from "./names.ts";
import { L, RUNTIME_OPS_PORT, RUNTIME_PORT, runtimeNames, type RuntimePodOptions } from "./spec.ts";
import { unreadAnswer } from "./unread-answer.ts";
import { followObject } from "./watch-object.ts";

const CLEANUP_BUDGET_MS = 15_000;
const why = (e: unknown): string => apiFailure(e)?.message ?? String(e);
// The patched Pod the API server answers with is not read (unread-answer.ts).
const mergePatch = unreadAnswer(setHeaderOptions("Content-Type", PatchStrategy.MergePatch));
/** The control plane label of every member: members are tenant- and control-plane-neutral until bound. */
const POOL_CONTROL_PLANE = "warm-pool";

/** A member this strategy started: its exact Pod, where it takes its binding, and whom it was bound to (once). */
export interface PoolMember {
  readonly host: HostFacts;
  readonly podIP: string;
  readonly bindEndpoint: string;
  boundTo?: string;
}

export interface PoolContext {
  readonly kc: KubeConfig;
  readonly core: CoreV1Api;
  readonly custom: CustomObjectsApi;
  readonly opts: RuntimePodOptions & {
    readonly readinessTimeoutMs?: number;
    readonly killGraceSeconds?: number;
    readonly poolCpuLimit?: number;
  };
  readonly clock: Clock;
}

const rejected = (code: ErrorCode, detail: string, layer: ReadinessLayer, owned: string[] = []): HostStartResult => ({
  outcome: "rejected",
  reason: { code, detail: detail.slice(0, 2000) },
  layer,
  owned,
});

/**
 * Starts member `memberId` (hosts.md "Warm pool", docs/kubernetes.md "Warm pools"): its Pod, then
 * its token Secret owned by that Pod; `onHostCreated` as soon as the Pod UID exists; then the exact
 * UID Ready=True (its readiness probe is the bind listener's `/readyz`) and its Pod IP. Proves
 * resource, host and endpoint (`http://<podIP>:<ops port>`, the bind endpoint). A failure deletes
 * exactly what it created.
 */
export async function startPoolMember(
  c: PoolContext,
  memberId: string,
  poolToken: string,
  onHostCreated?: (host: HostFacts) => Promise<void>,
): Promise<{ result: HostStartResult; member?: PoolMember }> {
  const ns = c.opts.namespace;
  const owned: OwnedObject[] = [];
  const ownedRefs = () => owned.map((o) => `${o.kind}:${o.namespace}/${o.name}:${o.uid}`);
  const fail = async (code: ErrorCode, detail: string, layer: ReadinessLayer) => {
    const problems = await cleanupOwned(c.kc, c.core, c.custom, owned, CLEANUP_BUDGET_MS);
    return { result: rejected(code, problems ? `${detail}; cleanup: ${problems}` : detail, layer, ownedRefs()) };
  };
  const body = buildPoolMemberPod(memberId, POOL_CONTROL_PLANE, c.opts);
  const name = body.metadata!.name!;
  let uid: string;
  try {
    const pod = await c.core.createNamespacedPod({ namespace: ns, body });
    uid = pod.metadata?.uid ?? "";
    owned.push({ kind: "Pod", namespace: ns, name, uid });
  } catch (e) {
    return { result: rejected("host-creation-failed", `pod ${ns}/${name}: ${why(e)}`, "resource") };
  }
  let host: HostFacts = { hostIncarnation: `pod:${uid}`, podUid: uid, podName: name, namespace: ns };
  if (onHostCreated) {
    try {
      await onHostCreated(host);
    } catch (e) {
      await cleanupOwned(c.kc, c.core, c.custom, owned, CLEANUP_BUDGET_MS);
      throw e;
    }
  }
  try {
    const secret = await c.core.createNamespacedSecret({
      namespace: ns,
      body: buildPoolTokenSecret(memberId, POOL_CONTROL_PLANE, poolToken, { name, uid }, c.opts),
    });
    owned.unshift({ kind: "Secret", namespace: ns, name: secret.metadata!.name!, uid: secret.metadata?.uid ?? "" });
  } catch (e) {
    return fail("host-creation-failed", `pool token Secret of ${memberId}: ${why(e)}`, "resource");
  }
  let ready;
  try {
    ready = await followObject(
      c.kc,
      podTarget(c.core, ns, name),
      (e) => readyDecision(uid, e),
      c.clock.now().getTime() + (c.opts.readinessTimeoutMs ?? 60_000),
    );
  } catch (e) {
    return fail("pod-readiness-timeout", `watching pod ${ns}/${name}: ${String(e)}`, "host");
  }
  if ("timeout" in ready) return fail("pod-readiness-timeout", `pool pod ${ns}/${name} uid ${uid} not Ready`, "host");
  if (!ready.ok) return fail("pod-failed", ready.detail, "host");
  const podIP = ready.pod.status?.podIP;
  if (!podIP) return fail("endpoint-resolution-failed", `pool pod ${ns}/${name} is Ready without a podIP`, "endpoint");
  host = { ...host, ...(ready.pod.spec?.nodeName ? { node: ready.pod.spec.nodeName } : {}) };
  const bindEndpoint = `http://${podIP}:${RUNTIME_OPS_PORT}`;
  return {
    result: {
      outcome: "created",
      host,
      endpoint: { endpoint: bindEndpoint, aliases: [] },
      layersPassed: ["resource", "host", "endpoint"],
      owned: ownedRefs(),
    },
    member: { host, podIP, bindEndpoint },
  };
}

/**
 * Binds `m` (already marked bound by the caller) to `spec`: records the binding on the exact Pod
 * UID (annotation {@link BOUND_TO}, the patch carries the UID as a precondition) while it posts the exact
 * environment a cold start gets (identity, sizing, command token, NATS credential minted for the
 * new id, tenant worker) to the member's bind endpoint with its token, and accepts only an answer
 * from that Pod UID (`pod:<uid>` is the incarnation the runtime derives from its own downward-API
 * UID) serving on its transport's port. A failure kills the member's Pod (exact UID): a member is
 * bound at most once.
 */
export async function bindPoolMember(
  c: PoolContext,
  memberId: string,
  m: PoolMember,
  poolToken: string,
  spec: HostSpec,
): Promise<{ result: HostStartResult; endpoint?: HostEndpoint }> {
  const ns = m.host.namespace ?? c.opts.namespace;
  const podName = m.host.podName ?? runtimeNames(c.opts.namePrefix ?? "drover-rt", memberId).pod;
  const uid = m.host.podUid ?? "";
  const refuse = async (code: ErrorCode, detail: string, layer: ReadinessLayer) => {
    const killed = await killPodExact(c.kc, c.core, ns, podName, uid, 0, CLEANUP_BUDGET_MS);
    const cleanup = killed.outcome === "killed" ? "" : `; clean-up: ${killed.detail}`;
    return {
      result: rejected(code, `binding ${memberId} as ${spec.runtimeInstanceId}: ${detail}${cleanup}`, layer, [
        `Pod:${ns}/${podName}:${uid}`,
      ]),
    };
  };
  // The Pod reads a tenant's Secret only through its own spec, which a member's cannot gain.
  if (spec.kubernetesSecret)
    return refuse(
      "host-config-missing",
      `tenant Secret ${spec.kubernetesSecret} cannot reach a pool member`,
      "resource",
    );
  const limit = c.opts.poolCpuLimit ?? DEFAULT_POOL_CPU_LIMIT;
  if (spec.sizing.workers > limit)
    return refuse(
      "host-config-missing",
      `${spec.sizing.workers} workers exceed the member's CPU limit ${limit}`,
      "resource",
    );
  // The annotation and the binding go out side by side: the patch was a whole API round trip before
  // the member's runtime even began its start (0.2-1.0 s, median per k8s P=5 proof at load 9-30).
  // Where the binding goes is not the patch's to guard: only an answer from this exact Pod UID is
  // accepted (below), and a failed patch (another UID under the name, or the API server refusing)
  // still kills the exact UID, whose bind then fails with it (the post's answer is not awaited).
  const t0 = Date.now();
  const timingsMs: Record<string, number> = {};
  const patched = c.core
    .patchNamespacedPod(
      {
        namespace: ns,
        name: podName,
        body: { metadata: { uid, annotations: { [BOUND_TO]: spec.runtimeInstanceId } } },
      },
      mergePatch,
    )
    .then(
      () => void (timingsMs.patched = Date.now() - t0),
      (e: unknown) => why(e),
    );
  const port = RUNTIME_PORT[spec.transport];
  const answered = postBinding(
    m.bindEndpoint,
    poolToken,
    bindingEnv(spec, m.podIP, port),
    c.opts.readinessTimeoutMs ?? 60_000,
  );
  const patchFailure = await patched;
  if (patchFailure !== undefined)
    return refuse("host-exited", `recording the binding on pod ${uid}: ${patchFailure}`, "host");
  const r = await answered;
  timingsMs.answered = Date.now() - t0;
  if (!r.ok || r.hostIncarnation !== m.host.hostIncarnation || r.port !== port) {
    const why = r.ok ? `answered by ${r.hostIncarnation} on port ${r.port}` : r.detail;
    return refuse("endpoint-resolution-failed", why, "endpoint");
  }
  const direct = `${m.podIP}:${port}`;
  const endpoint = { endpoint: spec.transport === "http" ? `http://${direct}` : direct, aliases: [] };
  return {
    result: {
      outcome: "converged",
      convergenceSource: `warm-pool:${memberId}`,
      host: m.host,
      endpoint,
      layersPassed: ["resource", "host", "endpoint"],
      owned: [],
      timingsMs,
    },
    endpoint,
  };
}

/**
 * Member `memberId` as another provisioner of the control plane recorded it (`host`: its exact Pod),
 * if that Pod is still there, Ready and unbound: a successor binds its dead predecessor's members
 * instead of counting them in its pool for ever. The bind then checks the Pod UID twice (the
 * annotation patch's precondition, and the incarnation the runtime answers with). A read failure is
 * "not adoptable": the claim looks at the next member.
 */
async function adoptablePod(c: PoolContext, memberId: string, host: HostFacts): Promise<PoolMember | undefined> {
  const ns = c.opts.namespace;
  const uid = host.podUid;
  if (!uid || !host.podName || (host.namespace ?? ns) !== ns || host.hostIncarnation !== `pod:${uid}`) return undefined;
  const pod = await c.core.readNamespacedPod({ namespace: ns, name: host.podName }).catch(() => undefined);
  const podIP = pod?.status?.podIP;
  if (!pod || !podIP || pod.metadata?.annotations?.[BOUND_TO] !== undefined) return undefined;
  if (pod.metadata?.labels?.[L.runtime] !== labelValue(memberId)) return undefined;
  const ready = readyDecision(uid, { type: "MODIFIED", obj: pod });
  if (!ready?.ok) return undefined;
  return {
    host: { ...host, namespace: ns, ...(pod.spec?.nodeName ? { node: pod.spec.nodeName } : {}) },
    podIP,
    bindEndpoint: `http://${podIP}:${RUNTIME_OPS_PORT}`,
  };
}

/**
 * The strategy's WarmPoolHost methods over its `members` (serialized per id by its lifecycle
 * `gate`): members need `pod-ip` exposure (the binding is posted to the Pod IP, and the bound
 * runtime is reached there); a member is bound at most once (never undone, whatever happens next).
 */
export function poolMethods(
  c: PoolContext,
  gate: LifecycleGate,
  exposure: string,
  members: Map<string, PoolMember>,
  runtimes: {
    taken(runtimeInstanceId: string): boolean;
    bound(spec: HostSpec, host: HostFacts, endpoint: HostEndpoint, layers: readonly ReadinessLayer[]): void;
  },
): WarmPoolHost {
  return {
    startPooled(memberId, poolToken, onHostCreated) {
      return gate.run(memberId, async () => {
        if (exposure !== "pod-ip")
          return rejected("host-config-missing", `warm pools need pod-ip exposure, not ${exposure}`, "resource");
        if (members.has(memberId) || runtimes.taken(memberId))
          return rejected("host-identity-collision", `pool member ${memberId} was started before`, "resource");
        const r = await startPoolMember(c, memberId, poolToken, onHostCreated);
        if (r.member) members.set(memberId, r.member);
        return r.result;
      });
    },
    canBind(memberId) {
      const m = members.get(memberId);
      return !!m && !m.boundTo;
    },
    adopt(memberId, host) {
      return gate.run(memberId, async () => {
        const known = members.get(memberId);
        if (known) return !known.boundTo;
        if (runtimes.taken(memberId)) return false;
        const m = await adoptablePod(c, memberId, host);
        if (m) members.set(memberId, m);
        return !!m;
      });
    },
    bind(memberId, poolToken, spec) {
      return gate.run(memberId, () =>
        gate.run(spec.runtimeInstanceId, async () => {
          const m = members.get(memberId);
          if (!m || m.boundTo || runtimes.taken(spec.runtimeInstanceId))
            return rejected(
              "host-exited",
              `pool member ${memberId} cannot be bound (unknown, bound, or id taken)`,
              "host",
            );
          m.boundTo = spec.runtimeInstanceId;
          const r = await bindPoolMember(c, memberId, m, poolToken, spec);
          if (r.result.outcome !== "rejected" && r.endpoint)
            runtimes.bound(spec, m.host, r.endpoint, r.result.layersPassed);
          return r.result;
        }),
      );
    },
  };
}
