import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startNats, type RunningServer } from "../../platform/local-servers.ts";
import {
  admitAndDispatch,
  chainDag,
  openControlPlaneDouble,
  waitForJournal,
  type ControlPlaneDouble,
} from "../support/control-plane-double.ts";
import { uniqueName } from "../support/isolation.ts";
import { startRuntimeProcess, type RuntimeProcess } from "../support/runtime-process.ts";

// A real nats-server (private: the test stops it) and real runtime processes: an ordinary stop
// (SIGTERM) ends a runtime within its stop budget though its NATS connection is gone, with a run in
// flight or none, and says so in its last log line.
const TENANT = "t-stop";
const BUDGET_MS = 3_000;
let nats: RunningServer;
let cp: ControlPlaneDouble;
const started: RuntimeProcess[] = [];

beforeAll(async () => {
  nats = await startNats();
  cp = await openControlPlaneDouble(nats.url, uniqueName("rtstop"));
});
afterAll(async () => {
  for (const r of started) await r.kill();
  await cp?.close().catch(() => undefined);
  await nats?.stop();
});

const runtime = async () => {
  const rt = await startRuntimeProcess({
    natsUrl: nats.url,
    streamTag: cp.layout.eventPrefix.replace(/\.drover$/, ""),
    runtimeInstanceId: uniqueName("rt"),
    transport: "http",
    tenantId: TENANT,
    env: { DROVER_RUNTIME_STOP_BUDGET_MS: String(BUDGET_MS) },
  });
  started.push(rt);
  return rt;
};

/** SIGTERM, then the exit (or "hung" after 20 s) and how long it took. */
async function stopped(rt: RuntimeProcess) {
  const t0 = Date.now();
  process.kill(rt.pid, "SIGTERM");
  const exit = await Promise.race([rt.exited, new Promise<"hung">((ok) => setTimeout(() => ok("hung"), 20_000))]);
  return { exit, ms: Date.now() - t0 };
}

describe("runtime SIGTERM with NATS gone (real nats-server and runtime processes)", () => {
  it("a runtime mid-run whose NATS server is gone drains what it can and exits within its stop budget, naming the run it left", async () => {
    const idle = await runtime();
    const busy = await runtime();
    const dag = chainDag(40, 400);
    const dispatchedSeq = await admitAndDispatch(
      cp,
      {
        tenantId: TENANT,
        sharedRunId: "run-stop",
        localRunId: "lr-stop-1",
        runtimeInstanceId: busy.runtimeInstanceId,
        hostIncarnation: busy.hostIncarnation,
        transport: busy.transport,
      },
      dag,
    );
    const r = await busy.send({
      operation: "DispatchRun",
      payload: {
        sharedRunId: "run-stop",
        localRunId: "lr-stop-1",
        tenantId: TENANT,
        dag,
        dispatchedSeq,
        correlationId: "run-stop",
      },
    } as never);
    expect(r.success).toBe(true);
    const executionId = String((r.payload.run as { executionId?: string }).executionId);
    await waitForJournal(cp, TENANT, executionId, (es) => es.some((e) => e.event.type === "exec.step-completed"));
    await cp.nc.close();
    await nats.stop();

    for (const rt of [busy, idle]) {
      const { exit, ms } = await stopped(rt);
      expect(exit, `${rt.runtimeInstanceId}: ${rt.stderr().slice(-800)}`).not.toBe("hung");
      // The budget, plus the listeners' and the connection's own bounded closes and node's exit.
      expect(ms).toBeLessThan(BUDGET_MS + 8_000);
      expect(exit).toMatchObject({ signal: null });
      const last = rt.lines.find((l) => l.event === "drained" || l.event === "drain-cut-short");
      expect(last, JSON.stringify(rt.lines.slice(-3))).toBeDefined();
      if (rt === busy) expect(last).toMatchObject({ event: "drain-cut-short", left: ["lr-stop-1"] });
      else expect(last).toMatchObject({ event: "drained" });
    }
  }, 120_000);
});
