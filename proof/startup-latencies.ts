import type { StoredEvent } from "../streams/index.ts";

export type Quantiles = { readonly p50: number; readonly p99: number };
/**
 * scale-out request → host layer, → route layer, → capacity published (every runtime), and the last
 * split by how the host came: a cold start (`publishedCold`) or a claimed warm pool member (`publishedWarm`).
 */
export type StartupLatencies = Readonly<
  Record<"hostReady" | "route" | "published" | "publishedCold" | "publishedWarm", Quantiles>
>;

/** p50/p99 of the finite values (NaN when there are none). */
export function quantiles(values: readonly number[]): Quantiles {
  const xs = values.filter(Number.isFinite).sort((a, b) => a - b);
  const q = (p: number) => xs[Math.min(xs.length - 1, Math.max(0, Math.ceil(p * xs.length) - 1))] ?? Number.NaN;
  return { p50: q(0.5), p99: q(0.99) };
}

/**
 * For every runtime started from a scale-out request in the log: time from the request
 * (`scaleout.requested`) to its `host` layer (process alive / Pod Ready), its `route` layer (route
 * programmed and probed; Kubernetes gateway exposure only) and `capacity-published` (server
 * timestamps of the events, i.e. when the provisioner recorded each layer: it records the strategy's
 * layers together once the strategy returns, so `hostReady` and `route` are upper bounds and nearly
 * equal). A runtime whose `host-started` converged from a warm pool member (`convergenceSource`
 * `warm-pool:<member>`) counts as warm, any other as cold. Runtimes that never reached a step are
 * left out of that step.
 */
export function startupLatencies(log: readonly StoredEvent[]): StartupLatencies {
  const requested = new Map<string, number>();
  // Each runtime's events by subject prefix (`….runtime.<id>.`), in log order: one pass over the log.
  const byRuntime = new Map<string, StoredEvent[]>();
  for (const e of log) {
    if (e.event.type === "scaleout.requested") requested.set(e.subject.split(".").at(-2) ?? "", e.time.getTime());
    if (!e.event.type.startsWith("runtime.")) continue;
    const prefix = e.subject.slice(0, e.subject.lastIndexOf(".") + 1);
    const list = byRuntime.get(prefix);
    if (list) list.push(e);
    else byRuntime.set(prefix, [e]);
  }
  const steps: Record<keyof StartupLatencies, number[]> = {
    hostReady: [],
    route: [],
    published: [],
    publishedCold: [],
    publishedWarm: [],
  };
  for (const events of byRuntime.values()) {
    const reg = events.find((e) => e.event.type === "runtime.registered");
    if (reg?.event.type !== "runtime.registered" || !reg.event.data.scaleOutRequestId) continue;
    const t0 = requested.get(reg.event.data.scaleOutRequestId);
    if (t0 === undefined) continue;
    const at = (pred: (e: StoredEvent) => boolean) => events.find(pred)?.time.getTime();
    const layer = (l: string) =>
      at((e) => e.event.type === "runtime.readiness-layer-passed" && e.event.data.layer === l);
    const started = events.find((e) => e.event.type === "runtime.host-started")?.event.data as
      { convergenceSource?: string } | undefined;
    const warm = started?.convergenceSource?.startsWith("warm-pool:") ?? false;
    const published = at((e) => e.event.type === "runtime.capacity-published");
    for (const [k, t] of [
      ["hostReady", layer("host")],
      ["route", layer("route")],
      ["published", published],
      [warm ? "publishedWarm" : "publishedCold", published],
    ] as const) {
      if (t !== undefined) steps[k].push(t - t0);
    }
  }
  return {
    hostReady: quantiles(steps.hostReady),
    route: quantiles(steps.route),
    published: quantiles(steps.published),
    publishedCold: quantiles(steps.publishedCold),
    publishedWarm: quantiles(steps.publishedWarm),
  };
}
