import type { DataOf, HostIncarnation, ReadinessLayer } from "../../../contracts/index.ts";
import type { HostFacts, HostStartResult } from "../../../platform/hosts/types.ts";

type Started = Extract<HostStartResult, { outcome: "created" | "converged" }>;

/** A host's facts as `host-started` records them: the incarnation and whatever the host knows (pid, Pod, node). */
export function hostFactsData(h: HostFacts) {
  return {
    hostIncarnation: h.hostIncarnation as HostIncarnation,
    ...(h.pid !== undefined ? { pid: h.pid } : {}),
    // A Pod's exact name and namespace: a drained Pod is retired from these (retire-drained.ts).
    ...(h.podUid !== undefined ? { podUid: h.podUid } : {}),
    ...(h.podName !== undefined ? { podName: h.podName } : {}),
    ...(h.namespace !== undefined ? { namespace: h.namespace } : {}),
    ...(h.node !== undefined ? { node: h.node } : {}),
  };
}

/** `host-started` from a strategy's successful start: the host's facts and how the start converged. */
export function hostStartedData(r: Started): DataOf<"runtime.host-started"> {
  return {
    ...hostFactsData(r.host),
    convergence: r.outcome,
    ...(r.convergenceSource !== undefined ? { convergenceSource: r.convergenceSource } : {}),
  };
}

/**
 * The layers the strategy proved, in the canonical order (resource → host → endpoint → route), and
 * any layer the provider requires before `command` that the strategy did not prove: publishing on
 * a partial proof is the defect the layers exist to prevent. An endpoint with a `route` (shared
 * Gateway) always requires the `route` layer, whatever the provider's list says. `command` and `published` are never
 * the strategy's to claim.
 */
export function strategyLayers(
  r: Started,
  required: readonly ReadinessLayer[],
): { passed: ReadinessLayer[]; missing: ReadinessLayer[] } {
  const order: ReadinessLayer[] = ["resource", "host", "endpoint", "route"];
  const passed = order.filter((l) => r.layersPassed.includes(l));
  // An endpoint behind a shared route is only as good as the route: its proof is required too.
  const needed: readonly ReadinessLayer[] =
    r.endpoint.route && !required.includes("route") ? [...required, "route"] : required;
  const missing = needed.filter((l) => l !== "command" && l !== "published" && !passed.includes(l));
  return { passed, missing };
}
