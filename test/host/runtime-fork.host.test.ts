import { createHash } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Db, MongoClient } from "mongodb";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { DagDefinition, type DroverEvent } from "../../contracts/index.ts";
import { foldRun } from "../../aggregates/run.ts";
import { validateExecution } from "../../aggregates/replay-validation.ts";
import { readModelClient } from "../../platform/read-model-db.ts";
import { mongoReadModels } from "../../services/api/index.ts";
import { startForensics, type ForensicsService } from "../../services/forensics/index.ts";
import { runRef } from "../../streams/index.ts";
import { apiFixture, auth, type ApiFixture } from "../support/api-app.ts";
import {
  admitAndDispatch,
  openControlPlaneDouble,
  waitForAggregate,
  waitForJournal,
  type ControlPlaneDouble,
} from "../support/control-plane-double.ts";
import { uniqueName } from "../support/isolation.ts";
import { eventually } from "../support/streams.ts";
import { startRuntimeProcess, type RuntimeProcess } from "../support/runtime-process.ts";
import { startedExecutionId } from "../support/started-execution.ts";

// Boundary: runs submitted and forked through the real API (fastify, inject) on a real nats-server,
// executed by a real runtime process running a tenant worker whose steps count their executions in a
// file outside drover; the journals are read back from JetStream, shown by the API and replayed. Bulk
// forks select from the run-list read model the real forensics projector keeps on FerretDB.
const TENANT = "acme";
const WORKER = { module: "test/support/fork-worker.ts", kinds: ["count"] };
let fx: ApiFixture;
let cp: ControlPlaneDouble;
let rt: RuntimeProcess;
let dir: string;
let countFile: string;
let mongo: MongoClient;
let db: Db;
let projector: ForensicsService;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "drover-fork-"));
  countFile = join(dir, "executions.txt");
  mongo = readModelClient(inject("mongoUrl"));
  db = mongo.db(uniqueName("fork"));
  fx = await apiFixture(inject("natsUrl"), {
    tenants: [{ tenantId: TENANT, isolationMode: "dedicated", worker: WORKER } as never],
    readModels: mongoReadModels(db),
  });
  projector = await startForensics({ handle: fx.nc, layout: fx.layout, db });
  const tag = fx.layout.eventPrefix.replace(/\.drover$/, "");
  cp = await openControlPlaneDouble(inject("natsUrl"), tag);
  rt = await startRuntimeProcess({
    natsUrl: inject("natsUrl"),
    streamTag: tag,
    runtimeInstanceId: uniqueName("rt"),
    transport: "http",
    tenantId: TENANT,
    env: { DROVER_WORKER_MODULE: WORKER.module, DROVER_WORKER_KINDS: "count", FORK_COUNT_FILE: countFile },
  });
});
afterAll(async () => {
  await rt?.kill();
  await cp?.close();
  await projector?.stop();
  await db?.dropDatabase();
  await mongo?.close();
  await fx?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const step = (id: string, dependsOn: string[], params: Record<string, unknown> = {}) => ({
  id,
  kind: "custom",
  handler: "count",
  dependsOn,
  params,
});
const dagBody = {
  name: "fork-four",
  steps: [step("s1", []), step("s2", ["s1"]), step("s3", ["s2"], { failWhen: "failThird" }), step("s4", ["s3"])],
};
const executions = (): string[] => readFileSync(countFile, "utf8").trim().split("\n");

/** Places a run on the runtime as admission would (the run's fork origin in the command) and waits for its end. */
async function runToEnd(sharedRunId: string, n: number) {
  const dag = DagDefinition.parse(dagBody);
  const state = foldRun((await cp.store.read(runRef(TENANT, sharedRunId))).events);
  const placement = { tenantId: TENANT, sharedRunId, localRunId: `lr${n}-${sharedRunId.slice(-40)}` };
  const dispatchedSeq = await admitAndDispatch(
    cp,
    { ...placement, transport: "http", runtimeInstanceId: rt.runtimeInstanceId, hostIncarnation: rt.hostIncarnation },
    dag,
  );
  const r = await rt.send({
    operation: "DispatchRun",
    payload: {
      ...placement,
      dag,
      ...(state.input === undefined ? {} : { input: state.input }),
      ...(state.forkedFrom ? { fork: state.forkedFrom } : {}),
      dispatchedSeq,
      correlationId: sharedRunId,
    },
  } as never);
  expect(r, JSON.stringify(r)).toMatchObject({ success: true });
  const executionId = startedExecutionId(r.payload, placement.sharedRunId, placement.localRunId);
  const journal = await waitForJournal(cp, TENANT, executionId, (es) =>
    es.some((e) => e.event.type === "exec.completed" || e.event.type === "exec.failed"),
  );
  await waitForAggregate(cp, runRef(TENANT, sharedRunId), (es) =>
    es.some((e) => e.event.type === "run.completed" || e.event.type === "run.failed"),
  );
  return { executionId, journal, dag };
}

describe("fork through the API and a real runtime", () => {
  it("a 4-step run failing at s3 on an input flag, forked from s3 with the flag patched off: s1-s2 are reused (not executed again), s3-s4 execute, both runs link, replay matches", async () => {
    const input = { failThird: true, region: "eu" };
    const sub = await fx.app.inject({
      method: "POST",
      url: "/v1/runs",
      headers: auth("acme"),
      payload: { dag: dagBody, input, labels: { team: "a" } },
    });
    expect(sub.statusCode, sub.body).toBe(201);
    const originalId = sub.json().sharedRunId as string;
    const first = await runToEnd(originalId, 1);
    expect(executions()).toEqual(["s1", "s2", "s3"]);
    expect(first.journal.some((e) => e.event.type === "exec.failed")).toBe(true);

    const fork = () =>
      fx.app.inject({
        method: "POST",
        url: `/v1/runs/${originalId}/fork`,
        headers: { ...auth("acme"), "idempotency-key": "fork-1" },
        payload: { fromStep: "s3", inputPatch: { failThird: false } },
      });
    const res = await fork();
    expect(res.statusCode, res.body).toBe(201);
    const forkId = res.json().sharedRunId as string;
    expect(res.json().input).toEqual({ failThird: false, region: "eu" });
    const again = await fork();
    expect(again.statusCode, again.body).toBe(200);
    expect(again.json().sharedRunId).toBe(forkId);

    const second = await runToEnd(forkId, 1);
    // s1 and s2 ran once, in the original only; s3 ran twice (failed, then in the fork); s4 once.
    expect(executions()).toEqual(["s1", "s2", "s3", "s3", "s4"]);
    const types = second.journal.map((e) => e.event.type);
    expect(types.filter((t) => t === "exec.step-reused")).toHaveLength(2);
    expect(types.at(-1)).toBe("exec.completed");
    const reused = second.journal.filter((e) => e.event.type === "exec.step-reused").map((e) => e.event.data);
    const originalDone = new Map(
      first.journal
        .filter((e) => e.event.type === "exec.step-completed")
        .map((e) => [(e.event.data as { stepId: string }).stepId, e.event.data as { outputDigest: string }]),
    );
    expect(reused).toMatchObject([
      {
        stepId: "s1",
        fromRun: originalId,
        fromExecutionId: first.executionId,
        outputDigest: originalDone.get("s1")!.outputDigest,
      },
      {
        stepId: "s2",
        fromRun: originalId,
        fromExecutionId: first.executionId,
        outputDigest: originalDone.get("s2")!.outputDigest,
      },
    ]);
    const completedHere = second.journal
      .filter((e) => e.event.type === "exec.step-completed")
      .map((e) => (e.event.data as { stepId: string }).stepId);
    expect(completedHere).toEqual(["s3", "s4"]);

    const got = await fx.app.inject({ url: `/v1/runs/${forkId}`, headers: auth("acme") });
    expect(got.json()).toMatchObject({
      status: "completed",
      labels: { team: "a" },
      forkedFrom: { sharedRunId: originalId, fromStep: "s3", executionId: first.executionId },
    });
    expect(
      (got.json().steps as { id: string; state: string; reusedFrom: string | null }[]).map((s) => [
        s.id,
        s.state,
        s.reusedFrom,
      ]),
    ).toEqual([
      ["s1", "completed", originalId],
      ["s2", "completed", originalId],
      ["s3", "completed", null],
      ["s4", "completed", null],
    ]);
    const orig = await fx.app.inject({ url: `/v1/runs/${originalId}`, headers: auth("acme") });
    expect(orig.json()).toMatchObject({ status: "failed", forks: [{ sharedRunId: forkId, fromStep: "s3" }] });

    const digest = (s: string) => createHash("sha256").update(s).digest("hex");
    const journal = second.journal as readonly { seq: number; event: DroverEvent }[];
    expect(
      validateExecution({
        executionId: second.executionId,
        journal,
        dag: second.dag,
        digest,
        input: { value: res.json().input },
      }),
    ).toMatchObject({ kind: "match" });
  });

  it("answers 400 fork-invalid for a step not in the DAG, 409 fork-upstream-incomplete naming the steps that did not complete, 404 for another tenant's run", async () => {
    const sub = await fx.app.inject({
      method: "POST",
      url: "/v1/runs",
      headers: auth("acme"),
      payload: { dag: dagBody, input: { failThird: true } },
    });
    const id = sub.json().sharedRunId as string;
    await runToEnd(id, 1);
    const post = (fromStep: string, who: "acme" | "globex" = "acme") =>
      fx.app.inject({ method: "POST", url: `/v1/runs/${id}/fork`, headers: auth(who), payload: { fromStep } });
    const unknown = await post("nope");
    expect(unknown.statusCode, unknown.body).toBe(400);
    expect(unknown.json().error).toMatchObject({ code: "fork-invalid" });
    const late = await post("s4");
    expect(late.statusCode, late.body).toBe(409);
    expect(late.json().error).toMatchObject({ code: "fork-upstream-incomplete", details: { steps: ["s3"] } });
    const other = await post("s3", "globex");
    expect(other.statusCode, other.body).toBe(404);
  });

  it("bulk fork: a dry run names the failed runs a label selects; the fork of each reuses s1-s2 and runs s3-s4; a repeat forks none twice; run.forked records who asked", async () => {
    const ids: string[] = [];
    for (let i = 0; i < 2; i++) {
      const sub = await fx.app.inject({
        method: "POST",
        url: "/v1/runs",
        headers: auth("acme"),
        payload: { dag: dagBody, input: { failThird: true }, labels: { batch: "bulk" } },
      });
      ids.push(sub.json().sharedRunId as string);
      await runToEnd(ids[i]!, 1);
    }
    const bulk = (dryRun: boolean) =>
      fx.app.inject({
        method: "POST",
        url: "/v1/runs/bulk-fork",
        headers: auth("acme"),
        payload: {
          filter: { status: ["failed"], label: ["batch=bulk"] },
          fromStep: "s3",
          inputPatch: { failThird: false },
          dryRun,
        },
      });
    await eventually("the run list shows both runs failed", async () =>
      (await bulk(true)).json().matched === 2 ? true : undefined,
    );
    const dry = (await bulk(true)).json();
    expect(dry.runs.map((r: { sharedRunId: string }) => r.sharedRunId).sort()).toEqual([...ids].sort());
    expect(dry.runs.every((r: { forkRunId?: string }) => r.forkRunId === undefined)).toBe(true);
    const done = await bulk(false);
    expect(done.statusCode, done.body).toBe(200);
    const forks = done.json().runs as { sharedRunId: string; outcome: string; forkRunId: string }[];
    expect(forks.map((f) => f.outcome)).toEqual(["forked", "forked"]);
    const repeat = (await bulk(false)).json().runs as typeof forks;
    expect(repeat.map((f) => [f.outcome, f.forkRunId])).toEqual(forks.map((f) => ["already-forked", f.forkRunId]));

    const before = executions().length;
    for (const f of forks) {
      const { journal } = await runToEnd(f.forkRunId, 1);
      expect(journal.filter((e) => e.event.type === "exec.step-reused")).toHaveLength(2);
      expect(journal.at(-1)!.event.type).toBe("exec.completed");
      const orig = await fx.app.inject({ url: `/v1/runs/${f.sharedRunId}/events`, headers: auth("acme") });
      const linked = (orig.json().events as { event: { type: string; data: Record<string, unknown> } }[]).filter(
        (e) => e.event.type === "run.forked",
      );
      expect(linked.map((e) => e.event.data)).toEqual([{ forkRunId: f.forkRunId, fromStep: "s3", by: "tenant:acme" }]);
    }
    // Each fork executed s3 and s4 only.
    expect(executions().slice(before)).toEqual(["s3", "s4", "s3", "s4"]);
  });
});
