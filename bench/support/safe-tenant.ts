import { apiClient, chainDag } from "../../platform/api-client.ts";
import { runtimeRef, type EventStore, type StoredEvent } from "../../streams/index.ts";
import { runEnds, type RunEnds } from "./run-ends.ts";
import { WORKLOAD_TENANT } from "./workload-tenant.ts";

/** The tenant whose latency is measured, and the tenants whose runtimes the incident kills (all dedicated). */
export const SAFE = "t-safe";
export const HIT = ["t-hit1", "t-hit2", "t-hit3", "t-hit4"] as const;
export const tokenOf = (tenantId: string): string => `bench-token-${tenantId}-0001`;
export const TENANTS = [SAFE, ...HIT].map((tenantId) => ({
  ...WORKLOAD_TENANT,
  tenantId,
  workersPerInstance: 20,
  maxConcurrentRunsPerInstance: 20,
}));

/** One tenant's client on the public API: submits chains and awaits their ends on its event feed. */
export interface TenantClient {
  submit(steps: number, stepMs: number): Promise<string>;
  readonly ends: RunEnds;
}

export async function tenantClient(apiUrl: string, tenantId: string): Promise<TenantClient> {
  const api = apiClient(apiUrl, tokenOf(tenantId));
  const ends = await runEnds(apiUrl, tokenOf(tenantId));
  return {
    ends,
    async submit(steps, stepMs) {
      const r = await api.submit(chainDag(steps, stepMs));
      if (r.status !== 201) throw new Error(`${tenantId}: submit answered ${r.status}`);
      return r.body.sharedRunId as string;
    },
  };
}

/**
 * Keeps `inFlight` runs of a `steps` × `stepMs` chain going for a tenant until `stop()`: each ended
 * run is followed by a new one. Its runs must all complete (a run lost to the incident rejects `done`).
 */
export function steadyLoad(
  c: TenantClient,
  inFlight: number,
  steps: number,
  stepMs: number,
): { stop(): void; done: Promise<number> } {
  let stopped = false;
  let completed = 0;
  const lane = async () => {
    while (!stopped) {
      await c.ends.ended(await c.submit(steps, stepMs), 180_000);
      completed++;
    }
  };
  const done = Promise.all(Array.from({ length: inFlight }, lane)).then(() => completed);
  return { stop: () => void (stopped = true), done };
}

/**
 * The pid of the runtime process each tenant's newest started execution runs on (its
 * `runtime.host-started`, as the proof's kill gate reads it): the runtimes to SIGKILL.
 */
export async function runtimePids(
  store: EventStore,
  log: readonly StoredEvent[],
  tenants: readonly string[],
): Promise<number[]> {
  const pids: number[] = [];
  for (const t of tenants) {
    const started = log.filter((e) => e.event.type === "exec.started" && e.event.tenantId === t).at(-1)?.event;
    if (started?.type !== "exec.started") throw new Error(`${t} has no started execution`);
    const host = (await store.read(runtimeRef(started.data.runtimeInstanceId))).events.find(
      (s) => s.event.type === "runtime.host-started",
    )?.event;
    if (host?.type !== "runtime.host-started" || !host.data.pid)
      throw new Error(`${t}: runtime ${started.data.runtimeInstanceId} has no process`);
    pids.push(host.data.pid);
  }
  return pids;
}

/** submitted → `to` (stored timestamps, ms; the first `to` of each run) of each of `ids`; throws for a run without one. */
export function latencies(
  log: readonly StoredEvent[],
  ids: readonly string[],
  to: "run.completed" | "run.dispatched" = "run.completed",
): number[] {
  const want = new Set(ids);
  const at = new Map<string, { s?: number; c?: number }>();
  for (const e of log) {
    const id = e.event.correlationId;
    if (!want.has(id)) continue;
    const x = at.get(id) ?? {};
    if (e.event.type === "run.submitted") x.s = e.time.getTime();
    if (e.event.type === to) x.c ??= e.time.getTime();
    at.set(id, x);
  }
  return ids.map((id) => {
    const x = at.get(id);
    if (x?.s === undefined || x.c === undefined) throw new Error(`run ${id} has no submitted/${to} pair`);
    return x.c - x.s;
  });
}
