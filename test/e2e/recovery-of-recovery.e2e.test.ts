import { createHash } from "node:crypto";
import { jetstream } from "@nats-io/jetstream";
import { connectHarness } from "../../platform/nats-auth/server-keys.ts";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { decodeEvent } from "../../contracts/index.ts";
import { validateIncidentLog, validateRunLog } from "../../aggregates/replay-validation.ts";
import { follow } from "../../platform/follow.ts";
import { proofConfig, tokenOf, DEFAULT_PROOF } from "../../proof/scenario-config.ts";
import { proofDag } from "../../proof/workload.ts";
import { createEventStore, runtimeRef, type StoredEvent } from "../../streams/index.ts";
import { apiClient } from "../../platform/api-client.ts";
import { startControlPlane, type ControlPlane } from "../../platform/control-plane-processes.ts";
import { eventually } from "../support/streams.ts";

/**
 * Recovery of recovery (recovery.md, chaos matrix): the runtime holding an in-flight execution is
 * SIGKILLed after 25 durable steps, and the replacement that resumed it is SIGKILLed in turn after 10
 * more. All services and runtimes are real processes. Both incidents must converge: every run
 * completes exactly once, the execution keeps its ExecutionId with one step-completed per step, and
 * replay validation passes for every run and both incidents.
 */
describe("recovery of recovery: the replacement dies while running the resumed execution", () => {
  let cp: ControlPlane;
  beforeAll(async () => {
    const redis = new Redis(inject("redisUrl"), { db: 12 });
    await redis.flushdb();
    redis.disconnect();
    cp = await startControlPlane({
      natsUrl: inject("natsUrl"),
      redisUrl: `${inject("redisUrl")}/12`,
      config: proofConfig({ ...DEFAULT_PROOF, parallel: 1 }),
    });
  });
  afterAll(async () => {
    await cp?.stop();
  });

  it("converges both incidents: one completion per run, one step-completed per step, the same ExecutionId, replay validation passes", async () => {
    const tenantId = "p0-imp-a";
    const nc = await connectHarness({ servers: inject("natsUrl") });
    try {
      const store = createEventStore(nc, cp.layout);
      const steps = new Map<string, { runtime: string; n: number; run: string }>();
      const ids: string[] = [];
      const killed: string[] = [];
      let target: string | undefined; // the execution in flight at the first kill
      const killRuntime = async (rt: string) => {
        const host = (await store.read(runtimeRef(rt))).events.find(
          (e) => e.event.type === "runtime.host-started",
        )?.event;
        if (host?.type !== "runtime.host-started" || !host.data.pid) throw new Error(`no pid for ${rt}`);
        killed.push(rt);
        process.kill(host.data.pid, "SIGKILL");
      };
      // 1. kill the first runtime after 25 steps; 2. kill the runtime that resumed it after 10 more.
      const gate = await follow(
        jetstream(nc),
        { stream: cp.layout.eventStream, filters: [`${cp.layout.eventPrefix}.exec.${tenantId}.>`] },
        async (m) => {
          const e = decodeEvent(m.data);
          const ex = m.subject.split(".").at(-2)!;
          if (e.type === "exec.started")
            steps.set(ex, { runtime: e.data.runtimeInstanceId, n: 0, run: e.data.sharedRunId });
          const s = steps.get(ex);
          if (e.type === "exec.resumed" && s) s.runtime = e.data.runtimeInstanceId;
          if (e.type !== "exec.step-completed" || !s) return;
          s.n++;
          // The first run's execution (the one whose DAG holds after steps 25 and 35) is the target.
          if (killed.length === 0 && s.run === ids[0] && s.n === 25) {
            target = ex;
            await killRuntime(s.runtime);
          }
          // The replacement may run a redispatched run before the resumed one: wait until it runs *this* execution.
          else if (killed.length === 1 && ex === target && s.n === 35 && s.runtime !== killed[0])
            await killRuntime(s.runtime);
        },
      );
      const api = apiClient(cp.apiUrl, tokenOf(tenantId));
      // The first run holds 3 s after each kill point (a sleep step), so a kill this process sends late
      // (it lagged seconds behind the journal on a loaded machine) still lands mid-execution.
      const held = proofDag(
        50,
        10,
        1,
        "builtin",
        [25, 35].map((index) => ({ index, ms: 3_000 })),
      );
      for (let r = 0; r < 3; r++)
        ids.push((await api.submit(r === 0 ? held : proofDag(50, 10, 1), `ror-${r}`)).body.sharedRunId);
      for (const id of ids)
        await eventually(
          `run ${id} completed`,
          async () => ((await api.run(id)).body?.status === "completed" ? true : undefined),
          180_000,
        );
      await gate.stop();
      expect(killed).toHaveLength(2);

      const log: StoredEvent[] = [];
      await store.replay({ seq: 1 }, (e) => {
        log.push(e);
      });
      for (const id of ids)
        expect(log.filter((e) => e.event.type === "run.completed" && e.event.correlationId === id)).toHaveLength(1);
      const completed = log
        .filter((e) => e.event.type === "exec.step-completed" && e.subject.includes(`.${target}.`))
        .map((e) => (e.event.type === "exec.step-completed" ? e.event.data.stepId : ""));
      expect(new Set(completed).size).toBe(completed.length);
      expect(completed).toHaveLength(50);
      // resumed on the first replacement, and again after that replacement died
      expect(log.filter((e) => e.event.type === "exec.resumed" && e.subject.includes(`.${target}.`))).toHaveLength(2);
      const incidents = log.flatMap((e) =>
        e.event.type === "runtime.recovery-planned" ? [e.event.data.incidentId as string] : [],
      );
      expect(incidents).toHaveLength(2);
      const digest = (x: string) => createHash("sha256").update(x).digest("hex");
      for (const r of [
        ...ids.map((id) => validateRunLog(id, log, { digest })),
        ...incidents.map((i) => validateIncidentLog(i, log, { digest })),
      ]) {
        expect(r, r.kind === "divergence" ? r.divergence.message : "").toMatchObject({ kind: "match" });
      }
    } finally {
      await nc.close();
    }
  });
});
