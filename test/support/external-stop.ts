import { jetstream } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { Redis } from "ioredis";
import { expect } from "vitest";
import type { CapacityDescriptor } from "../../aggregates/capacity/descriptor.ts";
import { routability } from "../../aggregates/capacity/routability.ts";
import { decodeEvent, isPlannedStopId, type EventOf } from "../../contracts/index.ts";
import { apiClient, chainDag } from "../../platform/api-client.ts";
import { redisCapacityView } from "../../platform/capacity-view.ts";
import type { ControlPlane } from "../../platform/control-plane-processes.ts";
import { follow } from "../../platform/follow.ts";
import { createEventStore, runtimeRef, type StoredEvent } from "../../streams/index.ts";
import { eventually } from "./streams.ts";

export interface ExternalStopPlane {
  readonly nc: NatsConnection;
  readonly cp: ControlPlane;
  readonly controlPlaneId: string;
  /** The plane's Redis (the capacity view), with its database. */
  readonly redisUrl: string;
  readonly tenant: string;
  readonly token: string;
}

/** What the scenario stopped, and the `retired` it recorded for the caller's proof checks. */
export interface ExternalStop {
  readonly target: string;
  readonly retired: EventOf<"runtime.retired">["data"];
}

/**
 * A runtime stopped by someone other than drover (`stop`: the test's SIGTERM, an API DELETE of its
 * Pod), with two runs running and two queued locally on it (2 slots and 2 queued per runtime, ~3 s
 * each), the plane's services all real. Asserts what an ordinary stop must be: capacity drops the
 * runtime at its draining beat, runs submitted meanwhile go elsewhere, every run completes exactly
 * once, and the runtime is `retired` with a planned stop: no `suspected`, `host-exited` or `fenced`,
 * no resume, any recovery plan a planned stop's that moves nothing. The proof of the exit is the
 * caller's to check (it differs per host).
 */
export async function stopFromOutside(
  p: ExternalStopPlane,
  stop: (host: EventOf<"runtime.host-started">["data"]) => Promise<void>,
): Promise<ExternalStop> {
  const { cp, tenant } = p;
  const redis = new Redis(p.redisUrl);
  try {
    const store = createEventStore(p.nc, cp.layout);
    const api = apiClient(cp.apiUrl, p.token);
    // Steps completed per runtime (exec.step-completed does not name it: exec.started / resumed do).
    const onRuntime = new Map<string, string>();
    const steps = new Map<string, number>();
    const gate = await follow(
      jetstream(p.nc),
      { stream: cp.layout.eventStream, filters: [`${cp.layout.eventPrefix}.exec.${tenant}.>`] },
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
    for (let i = 0; i < 4; i++) ids.push((await api.submit(chainDag(12, 250), `before-${i}`)).body.sharedRunId);
    const target = await eventually(
      "a runtime with steps completed",
      async () => [...steps].find(([, n]) => n >= 2)?.[0],
      180_000,
    );
    await gate.stop();
    const host = (await store.read(runtimeRef(target))).events.find((s) => s.event.type === "runtime.host-started");
    if (host?.event.type !== "runtime.host-started") throw new Error(`no host-started for ${target}`);
    const heldAtStop = ids.length;
    await stop(host.event.data);

    // Capacity drops it at its draining beat, while its runs still run on it.
    const view = redisCapacityView<CapacityDescriptor>(redis, p.controlPlaneId);
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
      "the stopped runtime retired (or suspected, or its exit recorded)",
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
    for (const s of events)
      if (s.event.type === "runtime.recovery-planned") {
        expect(isPlannedStopId(s.event.data.incidentId)).toBe(true);
        expect(s.event.data.items).toEqual([]);
      }
    const retired = events.find((s) => s.event.type === "runtime.retired")?.event;
    if (retired?.type !== "runtime.retired") throw new Error(`${target} not retired: ${types.join(",")}`);
    expect(retired.data.stopped?.reason.code).toBe("host-stopped");
    expect(isPlannedStopId(retired.data.stopped?.stopId ?? "")).toBe(true);

    const log: StoredEvent[] = [];
    await store.replay({ seq: 1 }, (e) => {
      log.push(e);
    });
    for (const id of ids)
      expect(log.filter((e) => e.event.type === "run.completed" && e.event.correlationId === id)).toHaveLength(1);
    // No incident anywhere in this plane, and nothing moved.
    expect(log.filter((e) => e.event.type === "runtime.suspected")).toEqual([]);
    expect(log.filter((e) => e.event.type === "exec.resumed")).toEqual([]);
    // Nothing was dispatched to the stopped runtime after the runs it held at the stop.
    for (const id of ids.slice(heldAtStop)) {
      const d = log.find((e) => e.event.type === "run.dispatched" && e.event.correlationId === id)?.event;
      expect(d?.type === "run.dispatched" && d.data.runtimeInstanceId).not.toBe(target);
    }
    return { target, retired: retired.data };
  } finally {
    redis.disconnect();
  }
}
