import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { DagDefinition } from "../../contracts/index.ts";
import { execRef, type StoredEvent } from "../../streams/index.ts";
import { admitAndDispatch, openControlPlaneDouble, type ControlPlaneDouble } from "../support/control-plane-double.ts";
import { uniqueName } from "../support/isolation.ts";
import { startRuntimeProcess, type RuntimeProcess } from "../support/runtime-process.ts";

// Boundary: one real runtime process (4 workers) on a real nats-server holding 200 open waits;
// the test plays admission (admitted + dispatched) and measures what the waits hold: the workers
// (four 1 s runs dispatched meanwhile must run at once) and the runtime's resident memory.
const TENANT = "t-waitcap";
const WAITS = 200;
let cp: ControlPlaneDouble;
let rt: RuntimeProcess;

beforeAll(async () => {
  const tag = uniqueName("waitcap");
  cp = await openControlPlaneDouble(inject("natsUrl"), tag);
  rt = await startRuntimeProcess({
    natsUrl: inject("natsUrl"),
    streamTag: tag,
    runtimeInstanceId: uniqueName("rt"),
    transport: "http",
    tenantId: TENANT,
    sizing: { workers: 4, maxWorkersPerRun: 1, maxConcurrentRuns: WAITS + 8, localQueueCapacity: 0 },
  });
});
afterAll(async () => {
  await rt?.kill();
  await cp?.close();
});

const waitDag = DagDefinition.parse({
  steps: [{ id: "review", kind: "wait", params: { name: "approval", timeoutMs: 600_000 } }],
});
const workDag = DagDefinition.parse({ steps: [{ id: "work", kind: "compute", params: { durationMs: 1000 } }] });

async function dispatch(sharedRunId: string, dag: DagDefinition): Promise<string> {
  const placement = { tenantId: TENANT, sharedRunId, localRunId: `${sharedRunId}-l1` };
  const dispatchedSeq = await admitAndDispatch(
    cp,
    { ...placement, transport: "http", runtimeInstanceId: rt.runtimeInstanceId, hostIncarnation: rt.hostIncarnation },
    dag,
  );
  const r = await rt.send({
    operation: "DispatchRun",
    payload: { ...placement, dag, dispatchedSeq, correlationId: sharedRunId },
  } as never);
  expect(r, JSON.stringify(r)).toMatchObject({ success: true });
  return String((r.payload.run as { executionId: string }).executionId);
}

/** CPU seconds the process used so far (utime + stime of /proc/<pid>/stat, at 100 ticks a second). */
const cpuSeconds = (pid: number) => {
  const f = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
  return (Number(f[11]) + Number(f[12])) / 100;
};
const rssKiB = (pid: number) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1]);
async function until(check: () => Promise<boolean>, what: string, ms = 120_000): Promise<void> {
  const deadline = performance.now() + ms;
  while (!(await check())) {
    if (performance.now() > deadline) throw new Error(`not reached in ${ms} ms: ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
const has = (es: readonly StoredEvent[], type: string) => es.some((e) => e.event.type === type);

describe("200 open waits on one runtime with 4 workers", () => {
  it("hold none of the 4 workers: four 1 s runs dispatched meanwhile run at once (measured), and the runtime's memory per wait is measured", async () => {
    const rss0 = rssKiB(rt.pid);
    const executions: string[] = [];
    for (let i = 0; i < WAITS; i++) executions.push(await dispatch(uniqueName("run-wait"), waitDag));
    await until(async () => {
      let open = 0;
      for (const x of executions) if (has((await cp.store.read(execRef(TENANT, x))).events, "exec.wait-opened")) open++;
      return open === WAITS;
    }, `${WAITS} waits opened`);
    // Let the polls of every wait run a few rounds, then measure what 3 s of waiting costs.
    await new Promise((r) => setTimeout(r, 1500));
    const cpu0 = cpuSeconds(rt.pid);
    await new Promise((r) => setTimeout(r, 3000));
    const idleCpu = (cpuSeconds(rt.pid) - cpu0) / 3;
    const rss1 = rssKiB(rt.pid);

    const t0 = performance.now();
    const work = await Promise.all([0, 1, 2, 3].map(() => dispatch(uniqueName("run-work"), workDag)));
    const journals: (readonly StoredEvent[])[] = [];
    await until(async () => {
      journals.length = 0;
      for (const x of work) journals.push((await cp.store.read(execRef(TENANT, x))).events);
      return journals.every((es) => has(es, "exec.completed"));
    }, "four runs completed");
    const wallMs = performance.now() - t0;
    const done = journals.map((es) =>
      Date.parse(es.find((e) => e.event.type === "exec.step-completed")!.event.occurredAt),
    );
    const starts = journals.map((es) => Date.parse(es.find((e) => e.event.type === "exec.started")!.event.occurredAt));
    // All four ran side by side: each started before any of them completed.
    expect(Math.max(...starts)).toBeLessThan(Math.min(...done));
    expect(Math.max(...done) - Math.min(...starts)).toBeLessThan(2000);
    for (const x of executions)
      expect(has((await cp.store.read(execRef(TENANT, x))).events, "exec.wait-resolved")).toBe(false);
    console.log(
      `[measure] ${WAITS} open waits on a 4-worker runtime: 4 × 1 s runs done in ${wallMs.toFixed(0)} ms wall ` +
        `(${Math.max(...done) - Math.min(...starts)} ms first start → last completion); runtime RSS ${(rss0 / 1024).toFixed(0)} MiB → ` +
        `${(rss1 / 1024).toFixed(0)} MiB with the waits (${((rss1 - rss0) / WAITS).toFixed(0)} KiB per wait); ` +
        `waiting costs the runtime ${(idleCpu * 100).toFixed(0)}% of one core (its 500 ms polls)`,
    );
  });
});
