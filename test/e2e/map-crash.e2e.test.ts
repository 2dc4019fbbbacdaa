import { createHash } from "node:crypto";
import { jetstream } from "@nats-io/jetstream";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { validateIncidentLog, validateRunLog } from "../../aggregates/replay-validation.ts";
import { decodeEvent } from "../../contracts/index.ts";
import { apiClient } from "../../platform/api-client.ts";
import { startControlPlane, type ControlPlane } from "../../platform/control-plane-processes.ts";
import { follow } from "../../platform/follow.ts";
import { connectHarness } from "../../platform/nats-auth/server-keys.ts";
import { DEFAULT_PROOF, proofConfig, tokenOf } from "../../proof/scenario-config.ts";
import { createEventStore, runtimeRef, type StoredEvent } from "../../streams/index.ts";
import { eventually } from "../support/streams.ts";

const ITEMS = 40;
const KILL_AFTER = 10;

/**
 * A map step through every real service and a real runtime process (control-flow.md "Map"): the
 * runtime is SIGKILLed after 10 of 40 items completed; recovery resumes the execution on a
 * replacement, which re-derives the expansion and runs only the unfinished items. Read back from
 * JetStream: one expansion, each item completed exactly once, the fan-in's items in order, one
 * resume, and replay validation of the run and the incident.
 */
describe("map: a runtime SIGKILLed mid-map resumes only the unfinished items", () => {
  let cp: ControlPlane;
  beforeAll(async () => {
    const redis = new Redis(inject("redisUrl"), { db: 13 });
    await redis.flushdb();
    redis.disconnect();
    cp = await startControlPlane({
      natsUrl: inject("natsUrl"),
      redisUrl: `${inject("redisUrl")}/13`,
      config: proofConfig({ ...DEFAULT_PROOF, parallel: 1 }),
    });
  });
  afterAll(async () => {
    await cp?.stop();
  });

  it("runs 40 items with 10 before the kill and 30 after, none twice, and replay matches", async () => {
    const tenantId = "p0-imp-a";
    const nc = await connectHarness({ servers: inject("natsUrl") });
    try {
      const store = createEventStore(nc, cp.layout);
      let done = 0;
      let killed: string | undefined;
      let runtime: string | undefined;
      const gate = await follow(
        jetstream(nc),
        { stream: cp.layout.eventStream, filters: [`${cp.layout.eventPrefix}.exec.${tenantId}.>`] },
        async (m) => {
          const e = decodeEvent(m.data);
          if (e.type === "exec.started") runtime = e.data.runtimeInstanceId;
          if (e.type !== "exec.step-completed" || !e.data.stepId.startsWith("each--") || killed) return;
          if (++done < KILL_AFTER) return;
          killed = runtime!;
          const host = (await store.read(runtimeRef(killed))).events.find(
            (x) => x.event.type === "runtime.host-started",
          );
          if (host?.event.type !== "runtime.host-started" || !host.event.data.pid)
            throw new Error(`no pid for ${killed}`);
          process.kill(host.event.data.pid, "SIGKILL");
        },
      );
      const api = apiClient(cp.apiUrl, tokenOf(tenantId));
      const dag = {
        name: "map-crash",
        steps: [
          { id: "prepare", kind: "compute", params: { durationMs: 10 } },
          {
            id: "each",
            kind: "compute",
            dependsOn: ["prepare"],
            map: { over: "input.items", maxConcurrency: 2 },
            params: { durationMs: 250 },
          },
          { id: "report", kind: "compute", dependsOn: ["each"] },
        ],
      };
      const items = Array.from({ length: ITEMS }, (_, i) => ({ n: i }));
      const sub = await api.post("/v1/runs", { dag, input: { items } });
      expect(sub.status, JSON.stringify(sub.body)).toBe(201);
      const id = sub.body.sharedRunId as string;
      await eventually(
        `run ${id} completed`,
        async () => ((await api.run(id)).body?.status === "completed" ? true : undefined),
        180_000,
      );
      await gate.stop();
      expect(killed).toBeDefined();

      const log: StoredEvent[] = [];
      await store.replay({ seq: 1 }, (e) => {
        log.push(e);
      });
      const exec = log.filter((e) => e.event.type.startsWith("exec.") && e.event.correlationId === id);
      const of = (t: string) => exec.filter((e) => e.event.type === t);
      expect(of("exec.map-expanded").map((e) => e.event.data)).toMatchObject([{ stepId: "each", count: ITEMS }]);
      expect(of("exec.resumed")).toHaveLength(1);
      const resumedAt = of("exec.resumed")[0]!.seq;
      const completed = of("exec.step-completed").map((e) => (e.event.data as { stepId: string }).stepId);
      const itemIds = completed.filter((s) => s.startsWith("each--"));
      expect(new Set(itemIds).size).toBe(itemIds.length);
      expect(itemIds.sort()).toEqual(Array.from({ length: ITEMS }, (_, i) => `each--${i}`).sort());
      const before = of("exec.step-completed").filter(
        (e) => e.seq < resumedAt && (e.event.data as { stepId: string }).stepId.startsWith("each--"),
      );
      expect(before.length).toBeGreaterThanOrEqual(KILL_AFTER);
      expect(before.length).toBeLessThan(ITEMS);
      // Every item the killed runtime finished was not run again: nothing for it after the resume.
      const after = new Set(
        of("exec.step-completed")
          .filter((e) => e.seq > resumedAt)
          .map((e) => (e.event.data as { stepId: string }).stepId),
      );
      for (const e of before) expect(after.has((e.event.data as { stepId: string }).stepId)).toBe(false);
      const fanIn = of("exec.step-completed").find((e) => (e.event.data as { stepId: string }).stepId === "each");
      expect(fanIn).toBeDefined();
      expect(completed.at(-1)).toBe("report");

      const incidents = log.flatMap((e) =>
        e.event.type === "runtime.recovery-planned" ? [e.event.data.incidentId as string] : [],
      );
      expect(incidents).toHaveLength(1);
      const digest = (x: string) => createHash("sha256").update(x).digest("hex");
      for (const r of [validateRunLog(id, log, { digest }), validateIncidentLog(incidents[0]!, log, { digest })])
        expect(r, r.kind === "divergence" ? r.divergence.message : "").toMatchObject({ kind: "match" });
    } finally {
      await nc.close();
    }
  });
});
