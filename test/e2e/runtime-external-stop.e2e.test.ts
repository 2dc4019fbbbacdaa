import { jetstream } from "@nats-io/jetstream";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import type { CapacityDescriptor } from "../../aggregates/capacity/descriptor.ts";
import { routability } from "../../aggregates/capacity/routability.ts";
import { decodeEvent, isPlannedStopId } from "../../contracts/index.ts";
import { apiClient, chainDag } from "../../platform/api-client.ts";
import { redisCapacityView } from "../../platform/capacity-view.ts";
import { startControlPlane, type ControlPlane } from "../../platform/control-plane-processes.ts";
import { follow } from "../../platform/follow.ts";
import { connectHarness } from "../../platform/nats-auth/server-keys.ts";
import { createEventStore, runtimeRef, type StoredEvent } from "../../streams/index.ts";
import { eventually } from "../support/streams.ts";

const TENANT = "t-xstop";
const TOKEN = "token-external-stop-0001";
const CP = "cp-external-stop";

/**
 * A runtime stopped by someone other than drover (an operator's `kill`, a supervisor's stop: SIGTERM
 * from this test, not from the provisioner), all services real processes on real nats-server and Redis
 * with process hosts. The runtime drains: capacity drops it at its draining beat, the runs it holds
 * finish on it, and once its exit is proven the provisioner records a planned stop (`retired` with
 * `stopped`). Recovery opens no incident: no `suspected` (neither for its closed connection and
 * refused port, nor for the exit), no fence, no recovery plan. Every run completes exactly once.
 */
describe("a runtime stopped from outside drover (SIGTERM) is a planned stop, not an incident (all services real)", () => {
  let cp: ControlPlane;
  beforeAll(async () => {
    const redis = new Redis(inject("redisUrl"), { db: 14 });
    await redis.flushdb();
    redis.disconnect();
    cp = await startControlPlane({
      natsUrl: inject("natsUrl"),
      redisUrl: `${inject("redisUrl")}/14`,
      config: {
        controlPlaneId: CP,
        heartbeatIntervalMs: 250,
        dispatchTimeoutMs: 2000,
        tenants: [
          {
            tenantId: TENANT,
            isolationMode: "dedicated",
            maxRuntimeInstances: 2,
            workersPerInstance: 2,
            maxConcurrentRunsPerInstance: 2,
            localQueueCapacity: 2,
          },
        ],
        tokens: { [TOKEN]: { role: "tenant", tenantId: TENANT } },
      },
    });
  });
  afterAll(async () => {
    await cp?.stop();
  });

  it("drains on it, drops out of capacity at its draining beat, completes every run once, and records a planned stop with no incident", async () => {
    const nc = await connectHarness({ servers: inject("natsUrl") });
    const redis = new Redis(`${inject("redisUrl")}/14`);
    try {
      const store = createEventStore(nc, cp.layout);
      const api = apiClient(cp.apiUrl, TOKEN);
      // Steps completed per runtime (exec.step-completed does not name it: exec.started / resumed do).
      const onRuntime = new Map<string, string>();
      const steps = new Map<string, number>();
      const gate = await follow(
        jetstream(nc),
        { stream: cp.layout.eventStream, filters: [`${cp.layout.eventPrefix}.exec.${TENANT}.>`] },
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
      // Two running and two queued locally (2 slots + 2 queued per runtime), ~3 s each.
      for (let i = 0; i < 4; i++) ids.push((await api.submit(chainDag(12, 250), `before-${i}`)).body.sharedRunId);
      const target = await eventually(
        "a runtime with steps completed",
        async () => [...steps].find(([, n]) => n >= 2)?.[0],
        120_000,
      );
      await gate.stop();
      const host = (await store.read(runtimeRef(target))).events.find((s) => s.event.type === "runtime.host-started");
      if (host?.event.type !== "runtime.host-started" || !host.event.data.pid) throw new Error(`no pid for ${target}`);
      const heldAtStop = ids.length;
      process.kill(host.event.data.pid, "SIGTERM");

      // Capacity drops it at its draining beat, while its runs still run on it.
      const view = redisCapacityView<CapacityDescriptor>(redis, CP);
      const reasons = await eventually(
        "the capacity view says the runtime is draining",
        async () => {
          const d = await view.get(target);
          const r = d && routability(d, { now: Date.now(), staleMs: 750, reservedSlots: 0 });
          return r?.reasons.includes("draining") ? r : undefined;
        },
        10_000,
      );
      expect(reasons.canAcceptRun).toBe(false);
      // Runs submitted meanwhile go elsewhere.
      for (let i = 0; i < 2; i++) ids.push((await api.submit(chainDag(3, 50), `after-${i}`)).body.sharedRunId);

      for (const id of ids)
        await eventually(
          `run ${id} completed`,
          async () => ((await api.run(id)).body?.status === "completed" ? true : undefined),
          180_000,
        );
      const ended = await eventually(
        "the stopped runtime retired (or suspected)",
        async () => {
          const types = (await store.read(runtimeRef(target))).events.map((s) => s.event.type);
          return types.includes("runtime.retired") || types.includes("runtime.suspected") ? types : undefined;
        },
        60_000,
      );
      // A late suspicion would come within the staleness bound and the kill budget's fence: give it a moment.
      await new Promise((r) => setTimeout(r, 2_000));
      const events = (await store.read(runtimeRef(target))).events;
      const types = events.map((s) => s.event.type);
      const suspected = events.flatMap((s) => (s.event.type === "runtime.suspected" ? [s.event.data.reason] : []));
      expect(types, `${ended.join(",")} ${JSON.stringify(suspected)}`).not.toContain("runtime.suspected");
      expect(types).not.toContain("runtime.fenced");
      // Recovery's plan after a planned stop names the stop, never an incident; a full drain left nothing to move.
      const plans = events.flatMap((s) => (s.event.type === "runtime.recovery-planned" ? [s.event.data] : []));
      for (const p of plans) {
        expect(isPlannedStopId(p.incidentId)).toBe(true);
        expect(p.items).toEqual([]);
      }
      const retired = events.find((s) => s.event.type === "runtime.retired")?.event;
      expect(retired?.type === "runtime.retired" && retired.data.stopped?.proof.kind).toBe("process-exit");
      expect(retired?.type === "runtime.retired" && isPlannedStopId(retired.data.stopped?.stopId ?? "")).toBe(true);

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
      const dispatchedTo = (id: string) =>
        log.find((e) => e.event.type === "run.dispatched" && e.event.correlationId === id)?.event;
      for (const id of ids.slice(heldAtStop)) {
        const d = dispatchedTo(id);
        expect(d?.type === "run.dispatched" && d.data.runtimeInstanceId).not.toBe(target);
      }
    } finally {
      redis.disconnect();
      await nc.close();
    }
  });
});
