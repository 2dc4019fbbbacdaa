import { execFile } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { mkdirSync, readFileSync, rmSync } from "node:fs";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { jetstream } from "@nats-io/jetstream";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { validateIncidentLog, validateRunLog } from "../../aggregates/replay-validation.ts";
import { decodeEvent } from "../../contracts/index.ts";
import { apiClient } from "../../platform/api-client.ts";
import { type ControlPlane } from "../../platform/control-plane-processes.ts";
import { follow } from "../../platform/follow.ts";
import { connectHarness } from "../../platform/nats-auth/server-keys.ts";
import { createEventStore, runtimeRef, type StoredEvent } from "../../streams/index.ts";
import { eventually } from "../support/streams.ts";
import { startTenantStack } from "../support/tenant-stack.ts";

const ROOT = resolve(import.meta.dirname, "../..");
const ITEMS = 500;
const CONCURRENCY = 20;
const TOKEN = "token-tenant-map-00000001";
const TENANT = "t-map";
const DIR = join(ROOT, ".run", `map-e2e-${randomBytes(4).toString("hex")}`);

type Line = { what: "start" | "end"; n: number; pid: number; at: number };
const linesOf = (file: string): Line[] =>
  readFileSync(file, "utf8")
    .trim()
    .split("\n")
    .map((l) => {
      const [what, n, pid, at] = l.split(" ");
      return { what: what as Line["what"], n: Number(n), pid: Number(pid), at: Number(at) };
    });
/** The most items one process had started and not yet ended at any moment. */
const maxInFlight = (lines: readonly Line[], pid: number): number => {
  let now = 0;
  let max = 0;
  for (const l of lines.filter((x) => x.pid === pid)) max = Math.max(max, (now += l.what === "start" ? 1 : -1));
  return max;
};
const mapDag = (file: string, over: string, mapCaps: Record<string, unknown>, ms = 40) => ({
  name: "map-e2e",
  steps: [
    { id: "prepare", kind: "compute", params: { durationMs: 10 } },
    {
      id: "each",
      kind: "custom",
      handler: "tally",
      dependsOn: ["prepare"],
      map: { over, ...mapCaps },
      params: { file, ms, n: { $ref: "item.n" }, fail: { $ref: "item.fail" } },
    },
  ],
});

/**
 * Map steps through every real service and a real runtime process running a tenant worker
 * (control-flow.md "Map"). 500 items at maxConcurrency 20; the runtime is SIGKILLed when about half
 * are journaled; recovery resumes the execution on a replacement, which re-derives the expansion and
 * runs only the unfinished items. The worker writes each start and end to a file outside drover.
 */
describe("map: 500 items, a SIGKILL mid-map, tolerated failures (all services real)", () => {
  let cp: ControlPlane;
  beforeAll(async () => {
    mkdirSync(DIR, { recursive: true });
    cp = await startTenantStack({
      db: 13,
      controlPlaneId: "cp-map-e2e",
      token: TOKEN,
      tenant: {
        tenantId: TENANT,
        isolationMode: "dedicated",
        maxRuntimeInstances: 1,
        workersPerInstance: CONCURRENCY,
        maxWorkersPerRun: CONCURRENCY,
        maxConcurrentRunsPerInstance: 2,
        worker: { module: join(ROOT, "test/support/map-worker.ts"), kinds: ["tally"] },
      },
    });
  });
  afterAll(async () => {
    await cp?.stop();
    rmSync(DIR, { recursive: true, force: true });
  });
  const api = () => apiClient(cp.apiUrl, TOKEN);
  const ended = (id: string) =>
    eventually(
      `run ${id} ended`,
      async () => {
        const r = await api().run(id);
        return ["completed", "failed"].includes(r.body?.status) ? r.body : undefined;
      },
      240_000,
    );

  it("every item is journaled once, unfinished items alone run after the resume, never more than 20 at once, 500 ordered outputs, same ExecutionId, replay matches", async () => {
    const file = join(DIR, "big.txt");
    const nc = await connectHarness({ servers: inject("natsUrl") });
    try {
      const store = createEventStore(nc, cp.layout);
      let done = 0;
      let killed: { runtime: string; pid: number } | undefined;
      let runtime: string | undefined;
      let runId: string | undefined;
      let atKill: { items: unknown } | undefined;
      const gate = await follow(
        jetstream(nc),
        { stream: cp.layout.eventStream, filters: [`${cp.layout.eventPrefix}.exec.${TENANT}.>`] },
        async (m) => {
          const e = decodeEvent(m.data);
          if (e.type === "exec.started") [runtime, runId] = [e.data.runtimeInstanceId, e.data.sharedRunId];
          if (e.type !== "exec.step-completed" || !e.data.stepId.startsWith("each--") || killed) return;
          if (++done < ITEMS / 2) return;
          const host = (await store.read(runtimeRef(runtime!))).events.find(
            (x) => x.event.type === "runtime.host-started",
          );
          if (host?.event.type !== "runtime.host-started" || !host.event.data.pid) throw new Error("no pid");
          killed = { runtime: runtime!, pid: host.event.data.pid };
          process.kill(killed.pid, "SIGKILL");
          // GET /v1/runs/:id with the runtime down: the map step's item counts, from the journal.
          const mid = await api().run(runId!);
          atKill = (mid.body.steps as { id: string; items: unknown }[]).find((s) => s.id === "each");
        },
      );
      const items = Array.from({ length: ITEMS }, (_, n) => ({ n, fail: false }));
      const sub = await api().post("/v1/runs", {
        // 150 ms items: the second half takes >= 1.9 s, time for the test's follower to see the
        // 250th completion and kill (at 40 ms, 0.5 s, which a loaded test process may lag past).
        dag: mapDag(file, "input.items", { maxConcurrency: CONCURRENCY }, 150),
        input: { items },
      });
      expect(sub.status, JSON.stringify(sub.body)).toBe(201);
      const id = sub.body.sharedRunId as string;
      const run = await ended(id);
      await gate.stop();
      expect(run.status, run.lastReason).toBe("completed");
      expect(killed).toBeDefined();
      // The fan-in (the run's output: the map step is the sink) holds the 500 outputs in item order.
      expect(run.output).toEqual({ items: items.map(({ n }) => ({ n, sq: n * n })), failed: [] });
      // The API's item counts: at the kill, part done and the rest open; at the end, all 500 completed.
      const counts = (atKill as { items: { total: number; completed: number; failed: number; open: number } }).items;
      expect(counts).toMatchObject({ total: ITEMS, failed: 0, open: ITEMS - counts.completed });
      expect(counts.completed).toBeGreaterThanOrEqual(ITEMS / 2);
      expect(counts.completed).toBeLessThan(ITEMS);
      expect(run.steps.find((s: { id: string }) => s.id === "each").items).toEqual({
        total: ITEMS,
        completed: ITEMS,
        failed: 0,
        open: 0,
      });
      expect(run.steps.find((s: { id: string }) => s.id === "prepare").items).toBeNull();

      const log: StoredEvent[] = [];
      await store.replay({ seq: 1 }, (e) => {
        log.push(e);
      });
      const exec = log.filter((e) => e.event.type.startsWith("exec.") && e.event.correlationId === id);
      const of = (t: string) => exec.filter((e) => e.event.type === t);
      expect(of("exec.map-expanded").map((e) => e.event.data)).toMatchObject([
        { stepId: "each", count: ITEMS, maxConcurrency: CONCURRENCY },
      ]);
      expect(new Set(exec.map((e) => e.subject.split(".").at(-2))).size).toBe(1); // one ExecutionId
      const resumed = of("exec.resumed");
      expect(resumed).toHaveLength(1);
      const item = (e: StoredEvent) => (e.event.data as { stepId: string }).stepId;
      const completed = of("exec.step-completed").map(item);
      const itemIds = completed.filter((s) => s.startsWith("each--"));
      expect(new Set(itemIds).size).toBe(ITEMS);
      expect(itemIds).toHaveLength(ITEMS);
      const before = new Set(
        of("exec.step-completed")
          .filter((e) => e.seq < resumed[0]!.seq)
          .map(item)
          .filter((s) => s.startsWith("each--"))
          .map((s) => Number(s.slice("each--".length))),
      );
      expect(before.size).toBeGreaterThanOrEqual(ITEMS / 2);
      expect(before.size).toBeLessThan(ITEMS);

      // Outside drover: every item ended at least once; none journaled before the kill started again
      // after it; only items in flight at the kill (at most 20) ran twice; at most 20 at once per process.
      const lines = linesOf(file);
      const starts = new Map<number, Line[]>();
      for (const l of lines.filter((x) => x.what === "start")) starts.set(l.n, [...(starts.get(l.n) ?? []), l]);
      for (let n = 0; n < ITEMS; n++)
        expect(
          lines.some((l) => l.what === "end" && l.n === n),
          `item ${n}`,
        ).toBe(true);
      const twice = [...starts].filter(([, s]) => s.length > 1).map(([n]) => n);
      for (const n of twice) expect(before.has(n), `item ${n} was journaled before the kill`).toBe(false);
      expect(twice.length).toBeLessThanOrEqual(CONCURRENCY);
      const pids = [...new Set(lines.map((l) => l.pid))];
      expect(pids).toContain(killed!.pid);
      expect(pids.length).toBe(2);
      for (const pid of pids) expect(maxInFlight(lines, pid)).toBeLessThanOrEqual(CONCURRENCY);
      expect(Math.max(...pids.map((p) => maxInFlight(lines, p)))).toBeGreaterThan(1);

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

  it("3 items failing for good: toleratedFailures 5 completes and reports the 3; toleratedFailures 0 fails naming an item", async () => {
    const items = Array.from({ length: 30 }, (_, n) => ({ n, fail: n === 4 || n === 17 || n === 29 }));
    const submit = async (tolerated: number) => {
      const r = await api().post("/v1/runs", {
        dag: mapDag(join(DIR, `tolerate-${tolerated}.txt`), "input.items", {
          maxConcurrency: 5,
          toleratedFailures: tolerated,
        }),
        input: { items },
      });
      expect(r.status, JSON.stringify(r.body)).toBe(201);
      return r.body.sharedRunId as string;
    };
    const [tolerant, strict] = [await submit(5), await submit(0)];
    const ok = await ended(tolerant);
    expect(ok.status, ok.lastReason).toBe("completed");
    expect(ok.output.failed.map((f: { index: number }) => f.index)).toEqual([4, 17, 29]);
    expect(ok.output.items).toHaveLength(30);
    const bad = await ended(strict);
    expect(bad.status).toBe("failed");
    expect(bad.lastReason).toMatch(/map-failures-exceeded/);
    // The map step's error names the first failed item.
    const each = (bad.steps as { id: string; state: string; lastError: string | null }[]).find((s) => s.id === "each");
    expect(each).toMatchObject({ state: "failed" });
    expect(each!.lastError).toMatch(/each--(4|17|29)/);
    // The API's item counts: 27 completed and 3 failed of 30; the strict map stopped at its first failure.
    const countsOf = (r: {
      steps: { id: string; items: { total: number; completed: number; failed: number; open: number } }[];
    }) => r.steps.find((s) => s.id === "each")!.items;
    expect(countsOf(ok)).toEqual({ total: 30, completed: 27, failed: 3, open: 0 });
    const strictCounts = countsOf(bad);
    expect(strictCounts).toMatchObject({ total: 30 });
    expect(strictCounts.failed).toBeGreaterThanOrEqual(1);
    expect(strictCounts.completed + strictCounts.failed + strictCounts.open).toBe(30);
    // `drover runs get` (the installed CLI, over real HTTP) prints the same counts.
    const cli = await promisify(execFile)(process.execPath, [join(ROOT, "cli/bin.mjs"), "runs", "get", tolerant], {
      env: { ...process.env, DROVER_API_URL: cp.apiUrl, DROVER_TOKEN: TOKEN },
      timeout: 60_000,
    });
    expect(cli.stdout).toMatch(/MAP STEP\s+ITEMS\s+COMPLETED\s+FAILED\s+OPEN\n\s*each\s+30\s+27\s+3\s+0\s*\n/);
  });
});
