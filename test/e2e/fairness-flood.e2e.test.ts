import { connectHarness } from "../../platform/nats-auth/server-keys.ts";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { apiClient } from "../../platform/api-client.ts";
import { SERVICES, startControlPlane, type ControlPlane } from "../../platform/control-plane-processes.ts";
import { createEventStore, type StoredEvent } from "../../streams/index.ts";
import { eventually } from "../support/streams.ts";
import { DeliverPolicy, jetstream } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import type { StreamLayout } from "../../streams/layout.ts";
import { cpuSnapshot, cpuSpent } from "../../bench/support/cpu.ts";

/**
 * Fairness under a flood (every service a real process, real process hosts, real nats-server and
 * Redis): on one shared runtime, tenant t-flood submits FLOOD_RUNS runs as fast as 16 clients can,
 * paced by the API once its queue is deep (429 submission-rate-limited) and capped at maxQueuedRuns
 * (429 tenant-queue-full); its clients wait each 429's Retry-After and submit again, so every run is
 * accepted. Meanwhile tenant t-steady submits one run every 250 ms. Admission keeps the shared
 * runtime's last `sharedRuntimeHeadroom` places for tenants holding fewer than that many there and
 * orders tenants by weighted fair share, so the steady tenant's runs are placed at once, not behind
 * the flood's backlog. Latencies are the stream's timestamps (no client clock).
 * `make test` floods 400 (cap 300); `make test-flood` floods 10 000 (the issue's scale, cap 10 000).
 * The figures (printed) are in docs/security.md "Floods"; the bounds below keep a margin over them.
 * The issue's bound, B's p99 under the flood at most 1.5× its p99 alone, is asserted where it is
 * asked for, at 10 000 runs: `make test-flood` sets DROVER_FLOOD_P99_RATIO=1.5. `make test` (400
 * runs) keeps only the loose bound: on this shared 2-core machine the ratio at 400 runs swung from
 * 1.3 to 11.8 with the load (docs/security.md; 20 samples under the flood), so it would fail for the
 * machine, not for admission. DROVER_FLOOD_DUMP=<file> writes the stream's events (JSON lines) for
 * tracing where the slowest runs waited.
 */
const FLOOD = "token-tenant-flood-00001";
const STEADY = "token-tenant-steady-0001";
const FLOOD_RUNS = Number(process.env.DROVER_FLOOD_RUNS ?? 400);
const MAX_QUEUED = Number(process.env.DROVER_FLOOD_MAX_QUEUED ?? 300);
// The steady tenant's runs alone, before the flood. A p99 needs the samples for it: of 40 it is the
// largest (about the 97.6th percentile), while the flood's 300+ give a true 99th, so the issue's ratio
// (test-flood) is taken over 200 (its p99 the 3rd largest): DROVER_FLOOD_BASELINE_RUNS.
const BASELINE_RUNS = Number(process.env.DROVER_FLOOD_BASELINE_RUNS ?? 40);
// The flood tenant's submission pace: the default unless given (measurements: DROVER_FLOOD_PACE_ABOVE=1000000 is off).
const PACE = {
  ...(process.env.DROVER_FLOOD_PACE_ABOVE ? { queuedRunsAbove: Number(process.env.DROVER_FLOOD_PACE_ABOVE) } : {}),
  ...(process.env.DROVER_FLOOD_PACE_RATE ? { perSecond: Number(process.env.DROVER_FLOOD_PACE_RATE) } : {}),
};
// Measured 2026-12-02 (docs/security.md "Floods"): p99 273 ms at load ~15, 2 540 ms at load ~40; the
// bound keeps a margin for a busier machine.
const BOUND_DISPATCH_P99_MS = 8_000;
/** The issue's bound on B's p99 under the flood over its p99 alone (test-flood), if given. */
const P99_RATIO = process.env.DROVER_FLOOD_P99_RATIO ? Number(process.env.DROVER_FLOOD_P99_RATIO) : undefined;
/**
 * DROVER_FLOOD_READ_MODELS=1: the read models on as `make run` has them (forensics projecting every event
 * into the global setup's FerretDB), so their CPU competes with the control path's (CPU priority
 * classes for them were tried and reverted in session 22: docs/security.md "Floods").
 */
const READ_MODELS = process.env.DROVER_FLOOD_READ_MODELS === "1";
/** Run events after which a run no longer counts as queued. */
const LEAVE_QUEUE = new Set(["run.started", "run.completed", "run.failed", "run.cancelled", "run.rejected"]);
const dag = { steps: [{ id: "only", kind: "compute" as const, params: { durationMs: 20 } }] };
const pct = (xs: number[], p: number) =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.ceil(p * xs.length) - 1)]!;

/** Resolves once every run of `ids` has a `completed` stored: one ordered consumer on the tenant's completions (subjects and headers only). */
async function allCompleted(
  nc: NatsConnection,
  layout: StreamLayout,
  tenant: string,
  ids: readonly string[],
  timeoutMs: number,
): Promise<void> {
  const left = new Set(ids);
  const consumer = await jetstream(nc).consumers.get(layout.eventStream, {
    filter_subjects: [`${layout.eventPrefix}.run.${tenant}.*.completed`],
    headers_only: true,
    deliver_policy: DeliverPolicy.All,
  });
  const messages = await consumer.consume();
  const timer = setTimeout(() => messages.stop(), timeoutMs);
  try {
    for await (const m of messages) {
      left.delete(m.subject.split(".").at(-2)!);
      if (left.size === 0) break;
    }
  } finally {
    clearTimeout(timer);
    messages.stop();
  }
  if (left.size > 0) throw new Error(`${left.size} runs of ${tenant} not completed within ${timeoutMs} ms`);
}

describe("one tenant floods submissions (up to thousands, up to its limits); another's runs are still admitted and complete with bounded latency (all services real)", () => {
  let cp: ControlPlane;
  beforeAll(async () => {
    const redis = new Redis(inject("redisUrl"), { db: 8 });
    await redis.flushdb();
    redis.disconnect();
    const sizing = { workersPerInstance: 4, maxConcurrentRunsPerInstance: 4, localQueueCapacity: 8 };
    cp = await startControlPlane({
      natsUrl: inject("natsUrl"),
      redisUrl: `${inject("redisUrl")}/8`,
      ...(READ_MODELS ? { mongoUrl: inject("mongoUrl"), services: [...SERVICES, "forensics" as const] } : {}),
      config: {
        controlPlaneId: "cp-fair",
        heartbeatIntervalMs: 250,
        // Fairness is measured here, not failure detection: on this loaded 2-core machine a runtime busy
        // with the flood once missed 3 beats (751 ms) and was fenced mid-measurement.
        staleHeartbeatMs: 5_000,
        dispatchTimeoutMs: 3000,
        // the flood tenant's submissions and polls are far over the default 6 000 requests a minute
        api: { rateLimit: { max: 1_000_000 } },
        tenants: [
          // the flood tenant starts the one shared runtime; the steady one may start none
          {
            tenantId: "t-flood",
            isolationMode: "shared",
            maxRuntimeInstances: 1,
            maxQueuedRuns: MAX_QUEUED,
            ...(Object.keys(PACE).length > 0 ? { submissionPace: PACE } : {}),
            maxConcurrentRuns: 10_000,
            ...sizing,
          },
          { tenantId: "t-steady", isolationMode: "shared", maxRuntimeInstances: 0, ...sizing },
        ],
        tokens: {
          [FLOOD]: { role: "tenant", tenantId: "t-flood" },
          [STEADY]: { role: "tenant", tenantId: "t-steady" },
        },
      },
    });
  }, 240_000);
  afterAll(async () => {
    await cp?.stop();
  });

  it(
    "the steady tenant's submission → dispatch p99 stays bounded while the flood tenant's backlog is hundreds to thousands deep",
    async () => {
      const flood = apiClient(cp.apiUrl, FLOOD);
      const steady = apiClient(cp.apiUrl, STEADY);
      const done = (c: typeof flood, id: string) =>
        eventually(
          `run ${id} completed`,
          async () => ((await c.run(id)).body?.status === "completed" ? true : undefined),
          Math.max(240_000, FLOOD_RUNS * 200),
        );
      await done(flood, (await flood.submit(dag)).body.sharedRunId); // the shared runtime is up
      // One steady run every 250 ms, at least `min` of them and for as long as `more()` holds.
      // When each POST left the client and its answer came back (the dump's HTTP stage).
      const posted: Record<string, [number, number]> = {};
      const steadyRuns = async (min: number, more: () => boolean): Promise<string[]> => {
        const ids: string[] = [];
        while (ids.length < min || more()) {
          const sentAt = Date.now();
          const r = await steady.submit(dag);
          expect(r.status, JSON.stringify(r.body)).toBe(201);
          ids.push(r.body.sharedRunId);
          posted[r.body.sharedRunId] = [sentAt, Date.now()];
          await new Promise((res) => setTimeout(res, 250));
        }
        return ids;
      };
      const baseline = await steadyRuns(BASELINE_RUNS, () => false);
      for (const id of baseline) await done(steady, id);
      const cpuBefore = await cpuSnapshot(); // the services' CPU from the flood's start to its drain
      const clientBefore = process.cpuUsage(); // this process's: the flood's and the steady tenant's clients

      // The flood: 16 clients submit FLOOD_RUNS runs as fast as the API answers; like real clients,
      // on a 429 they wait its Retry-After and submit that run again (a 429 appended nothing).
      const floodIds: string[] = [];
      const refused: { status: number; code: unknown }[] = [];
      let next = 0;
      let flooding = true;
      const floodDone = Promise.all(
        Array.from({ length: 16 }, async () => {
          while (next < FLOOD_RUNS) {
            next++;
            for (;;) {
              const r = await flood.submit(dag);
              if (r.status === 201) floodIds.push(r.body.sharedRunId);
              else refused.push({ status: r.status, code: r.body?.error?.code });
              if (r.status !== 429) break;
              await new Promise((res) => setTimeout(res, (r.retryAfterSeconds ?? 1) * 1000));
            }
          }
        }),
      ).finally(() => (flooding = false));
      // The CPU while the flood's clients submitted, apart: the figure below runs on to the drain.
      const submitting = floodDone.then(async () => ({
        services: cpuSpent(cpuBefore, await cpuSnapshot()),
        client: process.cpuUsage(clientBefore),
      }));
      await new Promise((res) => setTimeout(res, 500)); // the backlog is building
      const [underFlood, , whileSubmitting] = await Promise.all([
        steadyRuns(20, () => flooding),
        floodDone,
        submitting,
      ]);
      for (const id of underFlood) await done(steady, id);
      const nc = await connectHarness({ servers: inject("natsUrl") });
      // The flood's runs' ends from one consumer on the stream, not 10 000 GET /v1/runs/:id one at a time
      // (before reads asked for exact batches, streams/stored.ts, polling them took longer than the flood).
      await allCompleted(nc, cp.layout, "t-flood", floodIds, Math.max(240_000, FLOOD_RUNS * 200));
      const cpu = cpuSpent(cpuBefore, await cpuSnapshot());

      const times = new Map<string, number>();
      const history = new Map<string, string[]>(); // the steady runs' events, for the slowest ones
      const completions = new Map<string, number>();
      // The flood's queue depth after every stored event (runs submitted, neither started nor ended;
      // tenant-settings maxQueuedRuns), in stream order: the cap holds on the log, not on our count of 201s.
      const queued = new Set<string>();
      const left = new Set<string>();
      let maxQueued = 0;
      const dump: string[] = [];
      await createEventStore(nc, cp.layout).replay({ seq: 1 }, (e: StoredEvent) => {
        if (process.env.DROVER_FLOOD_DUMP)
          dump.push(
            JSON.stringify({
              s: e.seq,
              t: e.time.getTime(),
              ty: e.event.type,
              id: e.event.correlationId,
              te: e.event.tenantId,
              d: e.event.data,
            }),
          );
        if (e.event.tenantId === "t-flood" && e.event.type.startsWith("run.")) {
          const id = e.event.correlationId;
          if (e.event.type === "run.submitted" && !left.has(id)) queued.add(id);
          else if (LEAVE_QUEUE.has(e.event.type)) {
            left.add(id);
            queued.delete(id);
          }
          maxQueued = Math.max(maxQueued, queued.size);
        }
        const k = `${e.event.type}/${e.event.correlationId}`;
        if (!times.has(k)) times.set(k, e.time.getTime());
        if (e.event.tenantId === "t-steady")
          history.set(e.event.correlationId, [
            ...(history.get(e.event.correlationId) ?? []),
            `${e.event.type.slice(4)}@${e.time.getTime()}${"reason" in e.event.data ? `(${String((e.event.data as { reason: { code: string } }).reason.code)})` : ""}`,
          ]);
        if (e.event.type === "run.completed")
          completions.set(e.event.correlationId, (completions.get(e.event.correlationId) ?? 0) + 1);
      });
      await nc.close();
      if (process.env.DROVER_FLOOD_DUMP) {
        const fs = await import("node:fs");
        fs.writeFileSync(process.env.DROVER_FLOOD_DUMP, dump.join("\n"));
        fs.writeFileSync(
          `${process.env.DROVER_FLOOD_DUMP}.posted.json`,
          JSON.stringify({ posted, baseline, underFlood }),
        );
      }
      const at = (type: string, id: string) => times.get(`${type}/${id}`)!;
      const latency = (ids: string[], to: string) => ids.map((id) => at(to, id) - at("run.submitted", id));
      const figures = (ids: string[]) => {
        const d = latency(ids, "run.dispatched");
        const c = latency(ids, "run.completed");
        const a = latency(ids, "run.admitted");
        const st = latency(ids, "run.started");
        return {
          runs: ids.length,
          // runs admission found no place for at first (queued before admitted): capacity, not the pass
          queuedFirst: ids.filter((id) => times.has(`run.queued-globally/${id}`)).length,
          admittedP50: pct(a, 0.5),
          admittedP99: pct(a, 0.99),
          dispatchP50: pct(d, 0.5),
          dispatchP99: pct(d, 0.99),
          // submission → start: what the tenant waits for (the runtime's local queue included)
          startedP50: pct(st, 0.5),
          startedP99: pct(st, 0.99),
          completedP50: pct(c, 0.5),
          completedP99: pct(c, 0.99),
        };
      };
      // How deep the flood's backlog was when each steady run was dispatched: runs of the flood
      // submitted and not yet dispatched. Fairness means steady runs did not wait for it to drain.
      const floodSpans = floodIds.map((id) => [at("run.submitted", id), at("run.dispatched", id)] as const);
      const backlogAt = (t: number) => floodSpans.filter(([s, d]) => s <= t && d > t).length;
      // Under the flood means submitted before its last run was dispatched: a steady run submitted
      // after that met no backlog (on a quiet machine 400 runs drain in ~3.5 s, before the 20 steady
      // runs' 5 s are over), and counting it would thin both the p99 and the backlog below.
      const drainedAt = Math.max(...floodSpans.map(([, d]) => d));
      const during = underFlood.filter((id) => at("run.submitted", id) < drainedAt);
      const backlog = during.map((id) => backlogAt(at("run.dispatched", id)));
      const floodStart = Math.min(...floodSpans.map(([s]) => s));
      const floodDrainMs = Math.max(...floodIds.map((id) => at("run.completed", id))) - floodStart;
      const refusedBy: Record<string, number> = {};
      for (const r of refused)
        refusedBy[`${r.status} ${String(r.code)}`] = (refusedBy[`${r.status} ${String(r.code)}`] ?? 0) + 1;
      const result = {
        baseline: figures(baseline),
        underFlood: figures(during),
        afterDrain: underFlood.length - during.length,
        dispatchP99Ratio: 0,
        startedP99Ratio: 0,
        flood: {
          accepted: floodIds.length,
          refused: refusedBy,
          maxQueued,
          submitMs: Math.max(...floodSpans.map(([s]) => s)) - floodStart,
          drainMs: floodDrainMs,
        },
        // CPU (ms, user + system) of the control plane's processes and runtimes over the flood, per run.
        cpuMsPerRun: Math.round(Object.values(cpu).reduce((a, b) => a + b, 0) / (floodIds.length + underFlood.length)),
        cpuMs: cpu,
        // The same while the flood's clients submitted (its `submitMs`), and this test process's own
        // (its HTTP clients, on the same two cores), ms.
        cpuMsWhileSubmitting: {
          ...whileSubmitting.services,
          testClients: Math.round((whileSubmitting.client.user + whileSubmitting.client.system) / 1000),
        },
        floodBacklogAtSteadyDispatch: { max: Math.max(...backlog), median: pct(backlog, 0.5) },
        // The slowest steady runs under the flood, event by event (ms after submission): where they waited.
        slowest: [...during]
          .sort(
            (a, b) =>
              at("run.dispatched", b) - at("run.submitted", b) - (at("run.dispatched", a) - at("run.submitted", a)),
          )
          .slice(0, 3)
          .map((id) =>
            (history.get(id) ?? []).map((h) =>
              h.replace(/@(\d+)/, (_, t: string) => ` +${Number(t) - at("run.submitted", id)}`),
            ),
          ),
      };
      result.dispatchP99Ratio = result.underFlood.dispatchP99 / result.baseline.dispatchP99;
      result.startedP99Ratio = result.underFlood.startedP99 / result.baseline.startedP99;
      console.log(JSON.stringify(result));
      // The only refusals are the tenant's submission pace and its queue cap (no per-token rate
      // limit, no error), every one retried until taken: all FLOOD_RUNS runs were accepted.
      expect(
        Object.keys(refusedBy).every((k) => k === "429 tenant-queue-full" || k === "429 submission-rate-limited"),
        JSON.stringify(refusedBy),
      ).toBe(true);
      expect(floodIds.length).toBe(FLOOD_RUNS);
      // The cap held on the log: the flood's queue never went past it, and when the cap refused,
      // the log's queue had reached it, give or take the other 15 clients' appends in flight.
      expect(maxQueued).toBeLessThanOrEqual(MAX_QUEUED);
      if (refusedBy["429 tenant-queue-full"] !== undefined) expect(maxQueued).toBeGreaterThanOrEqual(MAX_QUEUED - 15);
      // Exactly once for everyone.
      for (const id of [...baseline, ...underFlood, ...floodIds]) expect(completions.get(id), id).toBe(1);
      // The flood was real: enough steady runs came while it lasted, most dispatched past a deep backlog.
      expect(during.length, "steady runs submitted before the flood drained").toBeGreaterThanOrEqual(8);
      expect(pct(backlog, 0.5)).toBeGreaterThan(Math.min(50, MAX_QUEUED / 4));
      // Bounded, and by the runtime's slots rather than by the flood: far below the flood's own drain time.
      expect(result.underFlood.dispatchP99).toBeLessThan(BOUND_DISPATCH_P99_MS);
      expect(result.underFlood.dispatchP99).toBeLessThan(floodDrainMs / 4);
      // The issue's bound, where asked for (make test-flood): the flood raises B's p99 by at most that much.
      if (P99_RATIO !== undefined) expect(result.dispatchP99Ratio).toBeLessThanOrEqual(P99_RATIO);
    },
    Math.max(600_000, FLOOD_RUNS * 240),
  );
});
