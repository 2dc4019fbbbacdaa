import { createHash } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { jetstreamManager } from "@nats-io/jetstream";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { DagDefinition, type DroverEvent, type StoredOutputRef } from "../../contracts/index.ts";
import { createOutputStore } from "../../platform/output-store.ts";
import { foldRun } from "../../aggregates/run.ts";
import { foldExecution } from "../../aggregates/execution.ts";
import { validateExecution } from "../../aggregates/replay-validation.ts";
import { createStepCacheStore, rebuildStepCache, stepCacheStreamOf } from "../../platform/step-cache-store.ts";
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
import { startRuntimeProcess, type RuntimeProcess } from "../support/runtime-process.ts";
import { startedExecutionId } from "../support/started-execution.ts";

// Boundary: runs submitted through the real API (fastify, inject) on a real nats-server, executed by
// real runtime processes running tenant workers whose steps count their executions in files outside
// drover; the step cache index is the real JetStream stream, the journals are read back from
// JetStream and replayed. Three runtimes: acme on worker v1, acme on worker v2, globex on worker v1.
const V1 = "test/support/workers/cache-worker.ts";
const V2 = "test/support/workers/cache-worker-v2.ts";
const KINDS = ["price", "price-alt"];
let fx: ApiFixture;
let cp: ControlPlaneDouble;
let dir: string;
const rts = new Map<string, RuntimeProcess>();

const countFile = (name: string) => join(dir, `${name}.txt`);
/** How many times `what` executed on runtime `name` (lines its worker appended). */
const executions = (name: string, what: string): number =>
  existsSync(countFile(name))
    ? readFileSync(countFile(name), "utf8")
        .split("\n")
        .filter((l) => l === what).length
    : 0;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "drover-step-cache-"));
  fx = await apiFixture(inject("natsUrl"), {
    tenants: [
      { tenantId: "acme", isolationMode: "dedicated", worker: { module: V1, kinds: KINDS } } as never,
      { tenantId: "globex", isolationMode: "dedicated", worker: { module: V1, kinds: KINDS } } as never,
    ],
  });
  const tag = fx.layout.eventPrefix.replace(/\.drover$/, "");
  cp = await openControlPlaneDouble(inject("natsUrl"), tag);
  const start = async (name: string, tenantId: string, module: string) =>
    rts.set(
      name,
      await startRuntimeProcess({
        natsUrl: inject("natsUrl"),
        streamTag: tag,
        runtimeInstanceId: uniqueName(`rt-${name}`),
        transport: "http",
        tenantId,
        env: { DROVER_WORKER_MODULE: module, DROVER_WORKER_KINDS: KINDS.join(","), CACHE_COUNT_FILE: countFile(name) },
      }),
    );
  await Promise.all([start("acme-v1", "acme", V1), start("acme-v2", "acme", V2), start("globex-v1", "globex", V1)]);
});
afterAll(async () => {
  await Promise.all([...rts.values()].map((r) => r.kill()));
  await cp?.close();
  await fx?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const priceStep = (extra: Record<string, unknown> = {}) => ({
  id: "price",
  kind: "custom",
  handler: "price",
  params: { sku: { $ref: "input.sku" } },
  cache: { ttlMs: 60_000 },
  ...extra,
});

let n = 0;
/** Submits a run through the API, places it on runtime `rtName` as admission would and waits for its end. */
async function run(tenant: "acme" | "globex", rtName: string, dagBody: object, input: unknown) {
  const sub = await fx.app.inject({
    method: "POST",
    url: "/v1/runs",
    headers: auth(tenant),
    payload: { dag: dagBody, input },
  });
  expect(sub.statusCode, sub.body).toBe(201);
  const sharedRunId = sub.json().sharedRunId as string;
  const rt = rts.get(rtName)!;
  const dag = DagDefinition.parse(dagBody);
  const state = foldRun((await cp.store.read(runRef(tenant, sharedRunId))).events);
  const placement = { tenantId: tenant, sharedRunId, localRunId: `lr${++n}-${sharedRunId.slice(-40)}` };
  const dispatchedSeq = await admitAndDispatch(
    cp,
    { ...placement, transport: "http", runtimeInstanceId: rt.runtimeInstanceId, hostIncarnation: rt.hostIncarnation },
    dag,
  );
  const r = await rt.send({
    operation: "DispatchRun",
    payload: { ...placement, dag, input: state.input, dispatchedSeq, correlationId: sharedRunId },
  } as never);
  expect(r, JSON.stringify(r)).toMatchObject({ success: true });
  const executionId = startedExecutionId(r.payload, placement.sharedRunId, placement.localRunId);
  const journal = await waitForJournal(cp, tenant, executionId, (es) =>
    es.some((e) => e.event.type === "exec.completed" || e.event.type === "exec.failed"),
  );
  await waitForAggregate(cp, runRef(tenant, sharedRunId), (es) =>
    es.some((e) => e.event.type === "run.completed" || e.event.type === "run.failed"),
  );
  return { sharedRunId, executionId, journal, dag, input };
}

const ofType = (journal: readonly { event: DroverEvent }[], type: string) =>
  journal.filter((e) => e.event.type === type).map((e) => e.event.data as Record<string, unknown>);
const digest = (s: string) => createHash("sha256").update(s).digest("hex");

describe("step cache across runs through the API, real runtimes and the JetStream cache index", () => {
  it("a second run with the same step input reuses the first run's output: the step executed once (counter outside drover), the hit is an exec.step-reused naming run, execution, step and digest, replay matches", async () => {
    const dag = { name: "price-one", steps: [priceStep(), { id: "report", kind: "compute", dependsOn: ["price"] }] };
    const first = await run("acme", "acme-v1", dag, { sku: "a-1" });
    expect(executions("acme-v1", "price:a-1")).toBe(1);
    const completed = ofType(first.journal, "exec.step-completed").find((d) => d.stepId === "price")!;
    expect(completed.cacheKey).toMatch(/^[a-f0-9]{64}$/);

    // Another DAG (another step id) whose step has the same kind and resolved input: the key is not per step id.
    const other = {
      name: "price-two",
      steps: [
        { ...priceStep(), id: "lookup" },
        // A dependent reads the cached output like any completed step's.
        {
          id: "use",
          kind: "custom",
          handler: "price-alt",
          dependsOn: ["lookup"],
          params: { sku: { $ref: "steps.lookup.output.sku" } },
        },
      ],
    };
    const second = await run("acme", "acme-v1", other, { sku: "a-1", unrelated: true });
    expect(executions("acme-v1", "price:a-1")).toBe(1);
    expect(ofType(second.journal, "exec.step-completed").map((d) => d.stepId)).toEqual(["use"]);
    expect(executions("acme-v1", "price-alt:a-1")).toBe(1);
    const [hit] = ofType(second.journal, "exec.step-reused");
    expect(hit).toEqual({
      stepId: "lookup",
      fromRun: first.sharedRunId,
      fromExecutionId: first.executionId,
      output: completed.output,
      outputDigest: completed.outputDigest,
      cache: { key: completed.cacheKey, fromStepId: "price", storedAt: expect.any(String) },
    });
    expect(second.journal.at(-1)!.event.type).toBe("exec.completed");
    const state = foldExecution(second.journal);
    expect(state.completed.get("lookup")).toMatchObject({
      reusedFrom: { sharedRunId: first.sharedRunId, executionId: first.executionId },
    });
    expect(validateExecution({ ...second, digest, input: { value: second.input } })).toMatchObject({ kind: "match" });
    // The run shows the step as completed, reused from the first run, with the first run's output.
    const got = await fx.app.inject({ url: `/v1/runs/${second.sharedRunId}`, headers: auth("acme") });
    expect(got.json()).toMatchObject({ status: "completed", output: { sku: "a-1", by: "v1" } });
    expect(got.json().steps).toMatchObject([
      { id: "lookup", state: "completed", reusedFrom: first.sharedRunId },
      { id: "use", state: "completed", reusedFrom: null },
    ]);
  });

  it("a stored (large) output is reused by its object-store reference, not copied", async () => {
    const dag = { steps: [priceStep({ params: { sku: { $ref: "input.sku" }, padBytes: 20_000 } })] };
    const first = await run("acme", "acme-v1", dag, { sku: "g-7" });
    const second = await run("acme", "acme-v1", dag, { sku: "g-7" });
    expect(executions("acme-v1", "price:g-7")).toBe(1);
    const completed = ofType(first.journal, "exec.step-completed")[0]!;
    expect(completed.outputRef).toMatchObject({ size: expect.any(Number) });
    expect(ofType(second.journal, "exec.step-reused")[0]).toMatchObject({
      outputRef: completed.outputRef,
      outputDigest: completed.outputDigest,
    });
    expect(ofType(second.journal, "exec.step-reused")[0]!.output).toBeUndefined();
    // The run's output (its one step's, stored) reads back from the object store whole.
    const got = await fx.app.inject({ url: `/v1/runs/${second.sharedRunId}`, headers: auth("acme") });
    const ref = got.json().outputRef as StoredOutputRef;
    expect(ref.digest).toBe(completed.outputDigest);
    const bytes = await createOutputStore(cp.nc, cp.layout).get(ref);
    expect((JSON.parse(new TextDecoder().decode(bytes)) as { pad: string }).pad).toHaveLength(20_000);
  });

  it("another tenant with the same step input, the same tenant on another worker version, and another step kind do not hit", async () => {
    const dag = { steps: [priceStep()] };
    await run("acme", "acme-v1", dag, { sku: "b-2" });
    expect(executions("acme-v1", "price:b-2")).toBe(1);

    const globex = await run("globex", "globex-v1", dag, { sku: "b-2" });
    expect(executions("globex-v1", "price:b-2")).toBe(1);
    expect(ofType(globex.journal, "exec.step-reused")).toEqual([]);
    // Acme's entry is still there: globex's runtime can only have missed it by its key and subjects.
    const index = createStepCacheStore(cp.nc, cp.layout);
    const acmeKey = ofType((await run("acme", "acme-v1", dag, { sku: "b-2" })).journal, "exec.step-reused")[0]!.cache;
    expect(acmeKey).toMatchObject({ key: expect.stringMatching(/^[a-f0-9]{64}$/) });
    expect(await index.get("globex", (acmeKey as { key: string }).key)).toBeUndefined();

    const v2 = await run("acme", "acme-v2", dag, { sku: "b-2" });
    expect(executions("acme-v2", "price:b-2")).toBe(1);
    expect(ofType(v2.journal, "exec.step-reused")).toEqual([]);
    expect(ofType(v2.journal, "exec.step-completed")[0]!.output).toMatchObject({ by: "v2" });

    const alt = await run("acme", "acme-v1", { steps: [{ ...priceStep(), handler: "price-alt" }] }, { sku: "b-2" });
    expect(executions("acme-v1", "price-alt:b-2")).toBe(1);
    expect(ofType(alt.journal, "exec.step-reused")).toEqual([]);
    // Each executed once more only where it missed: acme on v1 ran price:b-2 once in all.
    expect(executions("acme-v1", "price:b-2")).toBe(1);
  });

  it("after its TTL a cached output is not used; a step without cache never hits; a failed step is never cached", async () => {
    // A TTL the second run falls within on a loaded machine too (a whole run may take over 1.5 s there).
    const TTL_MS = 6_000;
    const short = { steps: [priceStep({ cache: { ttlMs: TTL_MS } })] };
    await run("acme", "acme-v1", short, { sku: "c-3" });
    const within = await run("acme", "acme-v1", short, { sku: "c-3" });
    expect(ofType(within.journal, "exec.step-reused")).toHaveLength(1);
    expect(executions("acme-v1", "price:c-3")).toBe(1);
    await new Promise((ok) => setTimeout(ok, TTL_MS + 200));
    const after = await run("acme", "acme-v1", short, { sku: "c-3" });
    expect(ofType(after.journal, "exec.step-reused")).toEqual([]);
    expect(executions("acme-v1", "price:c-3")).toBe(2);

    const uncached = {
      steps: [{ id: "price", kind: "custom", handler: "price", params: { sku: { $ref: "input.sku" } } }],
    };
    for (let i = 0; i < 2; i++) await run("acme", "acme-v1", uncached, { sku: "d-4" });
    expect(executions("acme-v1", "price:d-4")).toBe(2);

    const failing = { steps: [priceStep({ params: { sku: { $ref: "input.sku" }, fail: true } })] };
    for (let i = 0; i < 2; i++) {
      const r = await run("acme", "acme-v1", failing, { sku: "e-5" });
      expect(r.journal.at(-1)!.event.type).toBe("exec.failed");
      expect(ofType(r.journal, "exec.step-reused")).toEqual([]);
    }
    expect(executions("acme-v1", "price:e-5")).toBe(2);
  });

  it("the cache index is rebuilt from the journals after its stream is purged, and hits again", async () => {
    const dag = { steps: [priceStep()] };
    const first = await run("acme", "acme-v1", dag, { sku: "f-6" });
    const jsm = await jetstreamManager(cp.nc);
    await jsm.streams.purge(stepCacheStreamOf(cp.layout));
    const miss = await run("acme", "acme-v1", dag, { sku: "f-6" });
    expect(ofType(miss.journal, "exec.step-reused")).toEqual([]);
    expect(executions("acme-v1", "price:f-6")).toBe(2);

    await jsm.streams.purge(stepCacheStreamOf(cp.layout));
    const index = createStepCacheStore(cp.nc, cp.layout);
    expect(await rebuildStepCache(cp.store, cp.layout, index, "acme")).toBeGreaterThan(0);
    const hit = await run("acme", "acme-v1", dag, { sku: "f-6" });
    expect(executions("acme-v1", "price:f-6")).toBe(2);
    const [reused] = ofType(hit.journal, "exec.step-reused");
    // The latest completion under the key wins: the second run's.
    expect(reused).toMatchObject({ fromRun: miss.sharedRunId, fromExecutionId: miss.executionId });
    expect(first.sharedRunId).not.toBe(miss.sharedRunId);
  });
});
