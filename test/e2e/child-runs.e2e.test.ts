import { createHash, randomBytes } from "node:crypto";
import { mkdirSync, readFileSync, rmSync } from "node:fs";
import { join, resolve } from "node:path";
import { jetstream } from "@nats-io/jetstream";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { validateRunLog } from "../../aggregates/replay-validation.ts";
import { decodeEvent } from "../../contracts/index.ts";
import { apiClient } from "../../platform/api-client.ts";
import { startControlPlane, type ControlPlane } from "../../platform/control-plane-processes.ts";
import { follow } from "../../platform/follow.ts";
import { connectHarness } from "../../platform/nats-auth/server-keys.ts";
import { DEFAULT_PROOF, proofConfig } from "../../proof/scenario-config.ts";
import { createEventStore, runtimeRef, type StoredEvent } from "../../streams/index.ts";
import { eventually } from "../support/streams.ts";

const ROOT = resolve(import.meta.dirname, "../..");
const TOKEN = "token-tenant-child-0000001";
const TENANT = "t-child";
const QUOTA_TOKEN = "token-tenant-child-quota1";
const QUOTA_TENANT = "t-child-quota";
const DIR = join(ROOT, ".run", `child-e2e-${randomBytes(4).toString("hex")}`);

/** The child: one tenant-code step squaring `input.n` (map-worker's `tally`, which logs each execution to a file). */
const CHILD = {
  name: "square",
  steps: [
    {
      id: "square",
      kind: "custom",
      handler: "tally",
      params: { file: { $ref: "input.file" }, n: { $ref: "input.n" }, ms: { $ref: "input.ms" } },
    },
  ],
};
const parentDag = (file: string, ms: number, extra: Record<string, unknown> = {}) => ({
  name: "parent",
  steps: [
    { id: "prep", kind: "compute", params: { durationMs: 10 } },
    {
      id: "child",
      kind: "run",
      dependsOn: ["prep"],
      dag: CHILD,
      params: { file, n: { $ref: "input.n" }, ms },
      ...extra,
    },
    {
      id: "after",
      kind: "custom",
      handler: "tally",
      dependsOn: ["child"],
      params: { file, n: { $ref: "steps.child.output.sq" }, ms: 10 },
    },
  ],
});
const sleeperDag = (onParentCancel: "cancel" | "abandon") => ({
  name: `parent-${onParentCancel}`,
  steps: [
    {
      id: "child",
      kind: "run",
      onParentCancel,
      dag: { name: "sleeper", steps: [{ id: "nap", kind: "sleep", params: { durationMs: 600_000 } }] },
    },
  ],
});

/**
 * Child runs (docs/control-flow.md "Child runs") through every real service (API, admission,
 * capacity, provisioner, recovery, forensics as processes), real runtime processes running a tenant
 * worker, and real nats-server, Redis and FerretDB.
 */
describe("child runs: a run step submits its child once, even across a SIGKILL, and cancels it with the parent (all services real)", () => {
  let cp: ControlPlane;
  beforeAll(async () => {
    mkdirSync(DIR, { recursive: true });
    const redis = new Redis(inject("redisUrl"), { db: 7 });
    await redis.flushdb();
    redis.disconnect();
    const base = proofConfig({ ...DEFAULT_PROOF, parallel: 1 });
    cp = await startControlPlane({
      natsUrl: inject("natsUrl"),
      redisUrl: `${inject("redisUrl")}/7`,
      config: {
        ...base,
        controlPlaneId: "cp-child-e2e",
        tenants: [
          {
            tenantId: TENANT,
            isolationMode: "dedicated",
            maxRuntimeInstances: 2,
            maxConcurrentRuns: 10,
            workersPerInstance: 4,
            maxWorkersPerRun: 4,
            maxConcurrentRunsPerInstance: 4,
            worker: { module: join(ROOT, "test/support/map-worker.ts"), kinds: ["tally"] },
          },
          // One run at a time: a parent waiting on its child holds the tenant's only slot.
          {
            tenantId: QUOTA_TENANT,
            isolationMode: "dedicated",
            maxRuntimeInstances: 1,
            maxConcurrentRuns: 1,
            workersPerInstance: 2,
            maxConcurrentRunsPerInstance: 2,
          },
        ],
        tokens: {
          ...base.tokens,
          [TOKEN]: { role: "tenant", tenantId: TENANT },
          [QUOTA_TOKEN]: { role: "tenant", tenantId: QUOTA_TENANT },
        },
      },
    });
  });
  afterAll(async () => {
    await cp?.stop();
    rmSync(DIR, { recursive: true, force: true });
  });
  const api = () => apiClient(cp.apiUrl, TOKEN);
  const ended = (id: string, states = ["completed", "failed", "cancelled"]) =>
    eventually(
      `run ${id} ended`,
      async () => {
        const r = await api().run(id);
        return states.includes(r.body?.status) ? r.body : undefined;
      },
      240_000,
    );
  const submit = async (body: unknown) => {
    const r = await api().post("/v1/runs", body);
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    return r.body.sharedRunId as string;
  };
  const childOf = (parentId: string) =>
    eventually(
      `a child of ${parentId}`,
      async () => ((await api().run(parentId)).body?.children?.[0]?.sharedRunId as string | undefined) ?? undefined,
      120_000,
    );
  const readLog = async (nc: Awaited<ReturnType<typeof connectHarness>>) => {
    const log: StoredEvent[] = [];
    await createEventStore(nc, cp.layout).replay({ seq: 1 }, (e) => {
      log.push(e);
    });
    return log;
  };

  it("a parent's run step completes with its child's output; GET /v1/runs/:id links parent and child both ways; replay of both matches", async () => {
    const file = join(DIR, "plain.txt");
    const id = await submit({ dag: parentDag(file, 50), input: { n: 7 } });
    const run = await ended(id);
    expect(run.status, run.lastReason).toBe("completed");
    // `after` squares the child's output: the child saw n=7 and answered { n: 7, sq: 49 }.
    expect(run.output).toEqual({ n: 49, sq: 2401 });
    expect(run.children).toHaveLength(1);
    const childId = run.children[0].sharedRunId as string;
    expect(run.children[0]).toMatchObject({ stepId: "child", attempt: 1 });
    expect(run.steps.find((s: { id: string }) => s.id === "child")).toMatchObject({ kind: "run", state: "completed" });
    const child = (await api().run(childId)).body;
    expect(child).toMatchObject({
      status: "completed",
      output: { n: 7, sq: 49 },
      input: { file, n: 7, ms: 50 },
      parent: { sharedRunId: id, executionId: run.executionId, stepId: "child", onParentCancel: "cancel" },
      children: [],
    });
    expect(child.labels).toEqual({ "drover.parent": id });
    const nc = await connectHarness({ servers: inject("natsUrl") });
    try {
      const log = await readLog(nc);
      const digest = (x: string) => createHash("sha256").update(x).digest("hex");
      for (const r of [validateRunLog(id, log, { digest }), validateRunLog(childId, log, { digest })])
        expect(r, r.kind === "divergence" ? r.divergence.message : "").toMatchObject({ kind: "match" });
    } finally {
      await nc.close();
    }
  });

  it("SIGKILL of the parent's runtime right after the child's run.submitted: the child exists once (one run.submitted), the parent completes after recovery with the same ExecutionId", async () => {
    const file = join(DIR, "killed.txt");
    const nc = await connectHarness({ servers: inject("natsUrl") });
    try {
      const store = createEventStore(nc, cp.layout);
      const parent: { id?: string } = {};
      let killed: { runtime: string; pid: number } | undefined;
      const runtimes = new Map<string, string>(); // executionId's run → runtime
      const gate = await follow(
        jetstream(nc),
        {
          stream: cp.layout.eventStream,
          filters: [`${cp.layout.eventPrefix}.exec.${TENANT}.>`, `${cp.layout.eventPrefix}.run.${TENANT}.>`],
        },
        async (m) => {
          const e = decodeEvent(m.data);
          if (e.type === "exec.started") runtimes.set(e.data.sharedRunId, e.data.runtimeInstanceId);
          if (e.type !== "run.submitted" || !parent.id || e.data.parent?.sharedRunId !== parent.id || killed) return;
          const runtime = runtimes.get(parent.id)!;
          const host = (await store.read(runtimeRef(runtime))).events.find(
            (x) => x.event.type === "runtime.host-started",
          );
          if (host?.event.type !== "runtime.host-started" || !host.event.data.pid) throw new Error("no pid");
          killed = { runtime, pid: host.event.data.pid };
          process.kill(killed.pid, "SIGKILL");
        },
      );
      // The child's step takes 3 s, so the parent is waiting on it when its runtime dies.
      const parentId = (parent.id = await submit({ dag: parentDag(file, 3_000), input: { n: 5 } }));
      const run = await ended(parentId);
      await gate.stop();
      expect(killed, "the parent's runtime was killed").toBeDefined();
      expect(run.status, run.lastReason).toBe("completed");
      expect(run.output).toEqual({ n: 25, sq: 625 });

      const log = await readLog(nc);
      const childIds = run.children.map((c: { sharedRunId: string }) => c.sharedRunId);
      expect(childIds).toHaveLength(1);
      const childSubmissions = log.flatMap((e) =>
        e.event.type === "run.submitted" && e.event.data.parent?.sharedRunId === parentId
          ? [e.event.data.sharedRunId]
          : [],
      );
      expect(childSubmissions).toEqual(childIds);
      // Submitted by admission from the parent's journal: a runtime may not write run.submitted.
      const childSubmitted = log.find(
        (e) => e.event.type === "run.submitted" && e.event.data.sharedRunId === childIds[0],
      );
      expect(childSubmitted?.event.writer.service).toBe("admission");
      const exec = log.filter((e) => e.event.type.startsWith("exec.") && e.event.correlationId === parentId);
      expect(new Set(exec.map((e) => e.subject.split(".").at(-2))).size).toBe(1); // one ExecutionId
      expect(exec.filter((e) => e.event.type === "exec.resumed")).toHaveLength(1);
      expect(exec.filter((e) => e.event.type === "exec.child-run-submitted")).toHaveLength(1);
      expect((await api().run(childIds[0])).body).toMatchObject({ status: "completed", output: { n: 5, sq: 25 } });
      const digest = (x: string) => createHash("sha256").update(x).digest("hex");
      const r = validateRunLog(parentId, log, { digest });
      expect(r, r.kind === "divergence" ? r.divergence.message : "").toMatchObject({ kind: "match" });
      // Outside drover: the child's step ran for n=5 (again only if the kill hit it in flight too).
      const lines = readFileSync(file, "utf8").trim().split("\n");
      expect(lines.some((l) => l.startsWith("end 5 "))).toBe(true);
    } finally {
      await nc.close();
    }
  });

  it("cancelling the parent cancels its child (by run:<parent>); a child whose step says abandon keeps running", async () => {
    const parent = await submit({ dag: sleeperDag("cancel") });
    const keeper = await submit({ dag: sleeperDag("abandon") });
    const [child, kept] = [await childOf(parent), await childOf(keeper)];
    await eventually(
      "both children started",
      async () =>
        (await Promise.all([child, kept].map(async (c) => (await api().run(c)).body?.status === "started"))).every(
          Boolean,
        ) || undefined,
      120_000,
    );
    for (const p of [parent, keeper])
      expect((await api().post(`/v1/runs/${p}/cancel`, { reason: "test" })).status).toBe(202);
    expect((await ended(parent)).status).toBe("cancelled");
    expect((await ended(keeper)).status).toBe("cancelled");
    const c = await ended(child);
    expect(c.status).toBe("cancelled");
    expect(c.cancelRequested).toMatchObject({ by: `run:${parent}` });
    const k = (await api().run(kept)).body;
    expect(k.status).toBe("started");
    expect(k.cancelRequested).toBeNull();
    expect(k.parent).toMatchObject({ sharedRunId: keeper, onParentCancel: "abandon" });
    expect((await api().post(`/v1/runs/${kept}/cancel`, { reason: "cleanup" })).status).toBe(202);
    expect((await ended(kept)).status).toBe("cancelled");
  });

  it("a run step whose child DAG is invalid, or nested more than 3 deep, is refused at submission with dag-invalid naming the step", async () => {
    const cyclic = {
      steps: [
        { id: "a", kind: "compute", dependsOn: ["b"] },
        { id: "b", kind: "compute", dependsOn: ["a"] },
      ],
    };
    const bad = await api().post("/v1/runs", {
      dag: { steps: [{ id: "outer", kind: "run", dag: cyclic }] },
    });
    expect(bad.status).toBe(400);
    expect(bad.body.error.code).toBe("dag-invalid");
    expect(JSON.stringify(bad.body.error.details.issues)).toMatch(/run step \\"outer\\" child DAG: .*dependency cycle/);
    const nest = (depth: number): unknown =>
      depth === 0
        ? { steps: [{ id: "leaf", kind: "compute" }] }
        : { steps: [{ id: `level-${depth}`, kind: "run", dag: nest(depth - 1) }] };
    const deep = await api().post("/v1/runs", { dag: nest(4) });
    expect(deep.status).toBe(400);
    expect(deep.body.error.code).toBe("dag-invalid");
    expect(JSON.stringify(deep.body.error.details.issues)).toMatch(/nest 4 levels deep here, more than the 3 allowed/);
    expect((await api().post("/v1/runs", { dag: nest(3) })).status).toBe(201);
  });

  it("a child counts against its tenant's quota like any run: with maxConcurrentRuns 1 it waits queued (tenant-quota-exceeded) until its parent's step times out, and the timeout cancels it (by run:<parent>)", async () => {
    const quota = apiClient(cp.apiUrl, QUOTA_TOKEN);
    const sub = await quota.post("/v1/runs", {
      dag: {
        steps: [
          {
            id: "child",
            kind: "run",
            timeoutMs: 8_000,
            dag: { steps: [{ id: "c", kind: "compute", params: { durationMs: 10 } }] },
          },
        ],
      },
    });
    expect(sub.status, JSON.stringify(sub.body)).toBe(201);
    const parent = sub.body.sharedRunId as string;
    const child = await eventually(
      "the child queued by the quota",
      async () => {
        const id = (await quota.run(parent)).body?.children?.[0]?.sharedRunId as string | undefined;
        const c = id ? (await quota.run(id)).body : undefined;
        return c?.status === "queued" && c.lastReason === "tenant-quota-exceeded" ? (id as string) : undefined;
      },
      120_000,
    );
    const ended = (id: string) =>
      eventually(
        `run ${id} ended`,
        async () => {
          const r = (await quota.run(id)).body;
          return ["completed", "failed", "cancelled"].includes(r?.status) ? r : undefined;
        },
        120_000,
      );
    const p = await ended(parent);
    expect(p.status).toBe("failed");
    expect(p.steps[0]).toMatchObject({ id: "child", state: "failed" });
    expect(p.steps[0].lastError).toMatch(/timeoutMs/);
    // The run step's timeout cancels its child (admission, from the parent's journal), queued or not.
    const c = await ended(child);
    expect(c.status).toBe("cancelled");
    expect(c.cancelRequested).toMatchObject({ by: `run:${parent}` });
    expect(c.cancelRequested.reason).toMatch(
      /^run step child attempt 1 of parent run \S+ failed: (step-timeout|.*timeoutMs)/,
    );
  });
});
