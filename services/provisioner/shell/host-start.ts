import { sourceWorker } from "../../../platform/hosts/worker-builds.ts";
import type { DataOf, HostIncarnation, ReadinessLayer, Reason } from "../../../contracts/index.ts";
import type { HostFacts, HostSpec, HostStartResult, HostStrategy } from "../../../platform/hosts/types.ts";
import type { Origin } from "./context.ts";
import { hostFactsData, hostStartedData, strategyLayers } from "../domain/start-record.ts";
import { probeCommandReadiness } from "./command-probe.ts";
import { stamp, type ProvisionerDeps } from "./context.ts";
import type { RuntimeWriter } from "./runtime-writer.ts";
import type { WarmBinding } from "./warm-pool.ts";
import { RuntimeEnded } from "./runtime-writer.ts";

/** A start that failed at a known layer with a catalogued reason. */
class StartFailed extends Error {
  constructor(
    readonly reason: Reason,
    readonly layer?: ReadinessLayer,
  ) {
    super(reason.detail);
  }
}

export type StartOutcome = { readonly ok: true } | { readonly ok: false; readonly reason: Reason };

export interface PlannedStart {
  readonly runtimeInstanceId: string;
  readonly registration: DataOf<"runtime.registered">;
  readonly writer: RuntimeWriter;
  /** The runtime's events carry its owner's tenant (none for a shared runtime). */
  readonly origin: Origin;
  /** A claimed warm pool member to bind instead of a cold start (its host-started is recorded already). */
  readonly warm?: WarmBinding;
}

/**
 * Drives a registered runtime from host start to published capacity: host-started, the strategy's
 * layers, a real GetQueueStatus (`command`), then `endpoint-published` and `capacity-published`,
 * each a conditional append that fails if the runtime ended meanwhile. On any failure it kills the
 * host this start created (only that incarnation) and records `host-start-failed` + `retired`.
 *
 * Failure modes: returns `{ ok: false, reason }` for every start failure; rethrows store errors
 * after killing what it started (the request is redelivered and the next attempt retires the runtime).
 */
export async function driveHostStart(d: ProvisionerDeps, p: PlannedStart): Promise<StartOutcome> {
  const reg = p.registration;
  let code: Partial<HostSpec>;
  try {
    code = await tenantCode(d, reg);
  } catch (e) {
    const reason = { code: "worker-invalid" as const, detail: String((e as Error).message ?? e).slice(0, 2000) };
    await recordFailure(d, p, reason, "resource");
    return { ok: false, reason };
  }
  const strategy = d.strategies.get(reg.hostProvider) as HostStrategy;
  const spec: HostSpec = {
    controlPlaneId: reg.controlPlaneId,
    runtimeInstanceId: p.runtimeInstanceId,
    ...(reg.tenantId ? { tenantId: reg.tenantId } : {}),
    ...(reg.tenantGroupId ? { tenantGroupId: reg.tenantGroupId } : {}),
    isolationMode: reg.isolationMode,
    transport: reg.transport,
    sizing: reg.sizing,
    commandToken: d.commandTokenFor(p.runtimeInstanceId),
    natsUrl: d.natsUrl,
    ...(d.natsCredsFor ? { natsCreds: d.natsCredsFor(p.runtimeInstanceId) } : {}),
    ...(d.natsCaFile && reg.hostProvider === "process" ? { natsCaFile: d.natsCaFile } : {}),
    ...(d.streamTag ? { streamTag: d.streamTag } : {}),
    ...(d.heartbeatMs ? { heartbeatMs: d.heartbeatMs } : {}),
    ...(d.llmBaseUrl ? { llmBaseUrl: d.llmBaseUrl } : {}),
    ...egressOf(d, reg.tenantId),
    ...code,
  };
  let host: HostFacts | undefined;
  let recorded = !!p.warm;
  // host-started is recorded the moment the process exists (the resource layer's fact), so a
  // provisioner that dies while the runtime boots leaves an incarnation its successor can kill.
  const onHostCreated = async (h: HostFacts): Promise<void> => {
    await p.writer.append([
      stamp(d, "runtime.host-started", { ...hostFactsData(h), convergence: "created" }, p.origin),
    ]);
    recorded = true;
  };
  try {
    // A warm start binds the claimed member (its host is recorded at claim); a cold start spawns one.
    const t0 = performance.now();
    const r = p.warm ? await p.warm.bind(spec) : await strategy.start(spec, undefined, onHostCreated);
    // Where a warm start's time goes: the bind (the member's start under its identity, and its proof).
    if (p.warm)
      d.log("warm pool member bound", {
        runtimeInstanceId: p.runtimeInstanceId,
        memberId: p.warm.memberId,
        outcome: r.outcome,
        bindMs: Math.round(performance.now() - t0),
        ...(r.outcome !== "rejected" && r.timingsMs ? { bind: r.timingsMs } : {}),
      });
    if (r.outcome === "rejected") throw new StartFailed(r.reason, r.layer);
    host = r.host;
    await proveAndPublish(d, p, spec, r, recorded);
    return { ok: true };
  } catch (e) {
    const failure = asFailure(e);
    if (!failure) {
      if (host) await strategy.kill(p.runtimeInstanceId, host, d.killBudgetMs).catch(() => undefined);
      throw e;
    }
    const killed = host ? await strategy.kill(p.runtimeInstanceId, host, d.killBudgetMs) : undefined;
    const detail =
      killed?.outcome === "timeout" ? `${failure.reason.detail}; clean-up: ${killed.detail}` : failure.reason.detail;
    const reason = { code: failure.reason.code, detail: detail.slice(0, 2000) };
    await recordFailure(d, p, reason, failure.layer);
    return { ok: false, reason };
  }
}

/** The egress settings a runtime runs steps under: its own tenant's, or every tenant's for a shared runtime. */
export function egressOf(d: ProvisionerDeps, tenantId: string | undefined): Partial<HostSpec> {
  if (!d.egress) return {};
  // Object.hasOwn: a tenant named like an Object.prototype member ("constructor") must not match it.
  const own =
    tenantId === undefined ? d.egress : Object.hasOwn(d.egress, tenantId) ? { [tenantId]: d.egress[tenantId] } : {};
  return Object.keys(own).length > 0 ? { egress: own as NonNullable<HostSpec["egress"]> } : {};
}

/**
 * The image a Kubernetes runtime's Pod runs when not the strategy's `runtimeImage`: its worker
 * version's reference (docs/worker-versions.md), else the tenant's `worker.image` (a tag reference,
 * which versions nothing). Undefined: the strategy's image.
 */
export function podImageOf(d: ProvisionerDeps, reg: PlannedStart["registration"]): string | undefined {
  if (reg.hostProvider !== "kubernetes") return undefined;
  if (reg.worker?.image) return reg.worker.image;
  return reg.tenantId && d.tenantSettings ? d.tenantSettings(reg.tenantId).worker?.image : undefined;
}

/** A warm pool member runs the provisioner's runtime image: it may be bound only to a runtime of that image. */
export function warmMemberServes(d: ProvisionerDeps, reg: PlannedStart["registration"]): boolean {
  const image = podImageOf(d, reg);
  return image === undefined || image === d.kubernetesImage;
}

/**
 * The tenant's worker and secrets for an owned runtime (a shared runtime gets neither: it serves
 * several tenants). Secrets sourced from the environment are read here and handed to this runtime
 * only; their values never reach an event.
 */
async function tenantCode(d: ProvisionerDeps, reg: PlannedStart["registration"]): Promise<Partial<HostSpec>> {
  if (!reg.tenantId || !d.tenantSettings) return {};
  const t = d.tenantSettings(reg.tenantId);
  if (reg.hostProvider === "kubernetes") {
    // The module path is inside the runtime image (the one its worker version names, if any);
    // secrets come from the tenant's Secret, never the spec.
    return {
      ...(t.worker ? { worker: { module: t.worker.module, kinds: t.worker.kinds } } : {}),
      ...(podImageOf(d, reg) ? { image: podImageOf(d, reg) } : {}),
      ...(t.secrets?.kubernetesSecret ? { kubernetesSecret: t.secrets.kubernetesSecret } : {}),
    };
  }
  const env = d.secretEnv ?? {};
  const secrets = Object.fromEntries(
    Object.entries(t.secrets?.env ?? {}).flatMap(([name, variable]) => {
      const v = env[variable];
      return v === undefined ? [] : [[name, v]];
    }),
  );
  return {
    ...(t.worker
      ? {
          // The build its registration names (decide() resolved it): a pinned version's own bundle.
          worker: {
            module: reg.worker
              ? (await (d.buildWorker ?? sourceWorker)(t.worker.module, reg.worker.version)).path
              : t.worker.module,
            kinds: t.worker.kinds,
          },
        }
      : {}),
    ...(t.secrets?.file ? { secretsFile: t.secrets.file } : {}),
    ...(Object.keys(secrets).length > 0 ? { secrets } : {}),
  };
}

async function proveAndPublish(
  d: ProvisionerDeps,
  p: PlannedStart,
  spec: HostSpec,
  r: Extract<HostStartResult, { outcome: "created" | "converged" }>,
  hostRecorded: boolean,
): Promise<void> {
  const o = p.origin;
  const t0 = performance.now();
  const hostIncarnation = r.host.hostIncarnation as HostIncarnation;
  if (!hostRecorded) await p.writer.append([stamp(d, "runtime.host-started", hostStartedData(r), o)]);
  const layers = strategyLayers(r, p.registration.requiredLayers);
  if (layers.missing.length > 0)
    throw new StartFailed(
      { code: "host-creation-failed", detail: `the ${r.outcome} host did not prove ${layers.missing.join(", ")}` },
      layers.missing[0],
    );
  // The strategy's layers are recorded in one append while the command layer is probed (its answer
  // is recorded after them): a warm bind's three appends and the probe had run one after another.
  // A claimed member's claim recorded some layers already (warm-pool.ts): not recorded twice.
  const toRecord = layers.passed.filter((l) => !p.warm?.layersRecorded.includes(l));
  const recordLayers =
    toRecord.length === 0
      ? Promise.resolve()
      : p.writer.append(
          toRecord.map((layer) =>
            stamp(d, "runtime.readiness-layer-passed", { layer, hostIncarnation, detail: layerDetail(layer, r) }, o),
          ),
        );
  let layersMs = -1;
  let probeMs = -1;
  const [, probe] = await Promise.all([
    recordLayers.then(() => void (layersMs = Math.round(performance.now() - t0))),
    (d.probe ?? probeCommandReadiness)(
      {
        runtimeInstanceId: p.runtimeInstanceId,
        hostIncarnation,
        endpoint: r.endpoint.endpoint,
        transport: spec.transport,
        token: spec.commandToken,
      },
      d.probeBudgetMs,
    ).then((x) => ((probeMs = Math.round(performance.now() - t0)), x)),
  ]);
  if (!probe.ok) throw new StartFailed(probe.reason, "command");
  // The command layer, then the endpoint and capacity, in one conditional append: capacity is in the
  // log only after every layer, and not at all if the runtime ended meanwhile (RuntimeWriter).
  await p.writer.append([
    stamp(
      d,
      "runtime.readiness-layer-passed",
      { layer: "command", hostIncarnation, detail: probe.detail.slice(0, 500) },
      o,
    ),
    stamp(
      d,
      "runtime.endpoint-published",
      {
        endpoint: r.endpoint.endpoint,
        aliases: [...r.endpoint.aliases],
        ...(r.endpoint.route ? { route: r.endpoint.route } : {}),
        routingHeader: "x-drover-runtime-instance-id",
        hostIncarnation,
      },
      o,
    ),
    stamp(d, "runtime.capacity-published", { hostIncarnation }, o),
  ]);
  d.log("start published", {
    runtimeInstanceId: p.runtimeInstanceId,
    layersMs,
    probeMs,
    publishedMs: Math.round(performance.now() - t0),
  });
}

function layerDetail(layer: ReadinessLayer, r: Extract<HostStartResult, { outcome: "created" | "converged" }>): string {
  const how = r.outcome === "converged" ? ` (converged: ${r.convergenceSource ?? "?"})` : "";
  switch (layer) {
    case "resource":
      return `host created${how}: ${r.owned.join(", ") || "nothing new"}`;
    case "host":
      return `${r.host.hostIncarnation} running`;
    case "endpoint":
      return `${r.endpoint.endpoint} allocated and announced`;
    default:
      return `${layer} proven by the host strategy`;
  }
}

/** Start failures get a catalogued reason; anything else (store unavailable, bugs) is not a business outcome. */
function asFailure(e: unknown): StartFailed | undefined {
  if (e instanceof StartFailed) return e;
  if (e instanceof RuntimeEnded) {
    return e.endedBy === "host-exited"
      ? new StartFailed(
          {
            code: "process-exited-during-startup",
            detail: `the host exited before readiness completed (${e.message})`,
          },
          "host",
        )
      : new StartFailed({ code: "host-start-abandoned", detail: e.message });
  }
  return undefined;
}

/** `host-start-failed` + `retired`, unless another provisioner already retired the runtime (it took the request over). */
async function recordFailure(
  d: ProvisionerDeps,
  p: PlannedStart,
  reason: Reason,
  layer?: ReadinessLayer,
): Promise<void> {
  const ended = p.writer.state?.endedBy;
  if (ended === "host-start-failed" || ended === "retired") return;
  await p.writer.append(
    [
      stamp(d, "runtime.host-start-failed", { reason, ...(layer ? { layer } : {}) }, p.origin),
      stamp(d, "runtime.retired", { reason: `start failed: ${reason.code}` }, p.origin),
    ],
    { evenIfEnded: true },
  );
}
