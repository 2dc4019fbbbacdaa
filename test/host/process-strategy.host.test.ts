import { spawn } from "node:child_process";
import { afterAll, describe, expect, it } from "vitest";
import { processIncarnation } from "../../platform/process-incarnation.ts";
import { processSpace } from "../../platform/process-space.ts";
import { createProcessStrategy, type ProcessHostStrategy } from "../../platform/hosts/process-strategy.ts";
import { incarnationState, parseProcessIncarnation } from "../../platform/hosts/proc-table.ts";
import type { HostObservation } from "../../platform/hosts/types.ts";
import { hostSpec, processGroupOf, processesWithEnv, RUNTIME_LOGS } from "../support/host-processes.ts";

// Real processes, no NATS: these tests prove host lifecycle boundaries of the process strategy with
// a stand-in runtime (test/support/fake-runtime.mjs); they prove no command transport.
const strategies: ProcessHostStrategy[] = [];
function strategy(mode: string, extra: Parameters<typeof createProcessStrategy>[0] = {}): ProcessHostStrategy {
  const s = createProcessStrategy({
    command: [process.execPath, "test/support/fake-runtime.mjs"],
    baseEnv: { PATH: process.env.PATH ?? "", FAKE_RUNTIME_MODE: mode },
    startupTimeoutMs: 20_000,
    logDir: RUNTIME_LOGS,
    ...extra,
  });
  strategies.push(s);
  return s;
}
afterAll(async () => {
  await Promise.all(strategies.map((s) => s.killAll()));
});

const ID = "DROVER_RUNTIME_INSTANCE_ID";

describe("process host strategy (real processes, stand-in runtime)", () => {
  it("starts one process in its own group and proves resource, host and endpoint for that exact incarnation", async () => {
    const s = strategy("listen");
    const spec = hostSpec();
    const r = await s.start(spec);
    if (r.outcome !== "created") throw new Error(JSON.stringify(r));
    const pid = r.host.pid as number;
    expect(r.host.hostIncarnation).toBe(processIncarnation(pid));
    // Its pid means something only in this process space (boot + PID namespace), recorded with it.
    expect(r.host.node).toBe(processSpace());
    expect(processGroupOf(pid)).toBe(pid);
    expect(r.layersPassed).toEqual(["resource", "host", "endpoint"]);
    expect(r.owned).toEqual([`process:${pid}`]);
    expect(await (await fetch(r.endpoint.endpoint)).text()).toBe("fake");
    expect(processesWithEnv(ID, spec.runtimeInstanceId)).toEqual([pid]);
    await s.kill(spec.runtimeInstanceId, r.host, 10_000);
  });

  it("converges concurrent duplicate starts of one RuntimeInstanceId on a single process", async () => {
    const s = strategy("listen");
    const spec = hostSpec();
    const results = await Promise.all([s.start(spec), s.start(spec), s.start(spec)]);
    expect(results.map((r) => r.outcome).sort()).toEqual(["converged", "converged", "created"]);
    const incarnations = new Set(results.map((r) => (r.outcome === "rejected" ? "" : r.host.hostIncarnation)));
    expect(incarnations.size).toBe(1);
    for (const r of results)
      if (r.outcome === "converged") expect([r.convergenceSource, r.owned]).toEqual(["lifecycle-cache", []]);
    expect(processesWithEnv(ID, spec.runtimeInstanceId)).toHaveLength(1);
  });

  it("refuses to converge a start whose identity differs from the running host's", async () => {
    const s = strategy("listen");
    const spec = hostSpec();
    expect((await s.start(spec)).outcome).toBe("created");
    const other = await s.start({ ...spec, tenantId: "tenant-b" });
    expect(other).toMatchObject({ outcome: "rejected", reason: { code: "host-identity-collision" }, owned: [] });
    expect(processesWithEnv(ID, spec.runtimeInstanceId)).toHaveLength(1);
  });

  it("rejects a runtime that exits during start-up with process-exited-during-startup, leaves nothing running and never respawns the id", async () => {
    const s = strategy("exit");
    const spec = hostSpec();
    const r = await s.start(spec);
    expect(r).toMatchObject({ outcome: "rejected", reason: { code: "process-exited-during-startup" }, layer: "host" });
    expect(r.outcome === "rejected" && r.reason.detail).toMatch(/code 3/);
    expect(processesWithEnv(ID, spec.runtimeInstanceId)).toEqual([]);
    expect(await s.start(spec)).toMatchObject({ outcome: "rejected", reason: { code: "host-exited" }, owned: [] });
    expect(processesWithEnv(ID, spec.runtimeInstanceId)).toEqual([]);
  });

  it("rejects an announced port the spawned process does not listen on, and kills what it spawned", async () => {
    const s = strategy("wrong-port");
    const spec = hostSpec();
    const r = await s.start(spec);
    expect(r).toMatchObject({ outcome: "rejected", reason: { code: "endpoint-resolution-failed" }, layer: "endpoint" });
    expect(r.owned).toHaveLength(1);
    expect(processesWithEnv(ID, spec.runtimeInstanceId)).toEqual([]);
  });

  it("hands the exact incarnation to onHostCreated before readiness, and a rejecting hook leaves nothing running", async () => {
    const s = strategy("silent");
    const spec = hostSpec();
    const seen: string[] = [];
    const start = s.start(spec, undefined, async (h) => {
      seen.push(h.hostIncarnation);
      expect(h.hostIncarnation).toBe(processIncarnation(h.pid as number));
      throw new Error("recording failed (injected)");
    });
    await expect(start).rejects.toThrow(/injected/);
    expect(seen).toHaveLength(1);
    const inc = parseProcessIncarnation(seen[0] as string)!;
    expect(incarnationState(inc.pid, inc.startTime)).toBe("gone");
    expect(processesWithEnv(ID, spec.runtimeInstanceId)).toEqual([]);
  });

  it("kill returns only after the exact incarnation has exited, even when the runtime ignores SIGTERM", async () => {
    const s = strategy("ignore-term");
    const spec = hostSpec();
    const r = await s.start(spec);
    if (r.outcome !== "created") throw new Error(JSON.stringify(r));
    const inc = parseProcessIncarnation(r.host.hostIncarnation)!;
    process.kill(inc.pid, "SIGTERM");
    const k = await s.kill(spec.runtimeInstanceId, r.host, 10_000);
    expect(incarnationState(inc.pid, inc.startTime)).toBe("gone");
    expect(k).toEqual({
      outcome: "killed",
      proof: { kind: "process-exit", pid: inc.pid, exitCode: null, signal: "SIGKILL" },
    });
  });

  it("a strategy that did not spawn the runtime proves its exit through /proc before kill returns", async () => {
    const spawner = strategy("ignore-term");
    const spec = hostSpec();
    const r = await spawner.start(spec);
    if (r.outcome !== "created") throw new Error(JSON.stringify(r));
    const inc = parseProcessIncarnation(r.host.hostIncarnation)!;
    const k = await strategy("listen").kill(spec.runtimeInstanceId, r.host, 10_000);
    expect(incarnationState(inc.pid, inc.startTime)).toBe("gone");
    expect(k).toMatchObject({ outcome: "killed", proof: { kind: "process-exit", pid: inc.pid, signal: "SIGKILL" } });
  });

  it("never signals a live process whose pid matches but whose start time does not", async () => {
    const bystander = spawn(process.execPath, ["-e", "setInterval(() => {}, 1000)"], { stdio: "ignore" });
    try {
      const pid = bystander.pid as number;
      const real = parseProcessIncarnation(processIncarnation(pid))!;
      const stale = { hostIncarnation: `pid:${pid}:${Number(real.startTime) + 1}`, pid, node: processSpace() };
      const k = await strategy("listen").kill("rt-not-ours", stale, 5_000);
      expect(k).toMatchObject({ outcome: "killed", proof: { signal: null } });
      expect(incarnationState(pid, real.startTime)).toBe("running");
    } finally {
      bystander.kill("SIGKILL");
    }
  });

  it("observes an exit it did not cause, naming the exact incarnation", async () => {
    const s = strategy("listen");
    const seen: HostObservation[] = [];
    const gotIt = new Promise<void>((ok) =>
      s.observe((f) => {
        seen.push(f);
        ok();
      }),
    );
    const spec = hostSpec();
    const r = await s.start(spec);
    if (r.outcome !== "created") throw new Error(JSON.stringify(r));
    process.kill(r.host.pid as number, "SIGKILL");
    await gotIt;
    expect(seen).toEqual([
      {
        kind: "exited",
        runtimeInstanceId: spec.runtimeInstanceId,
        hostIncarnation: r.host.hostIncarnation,
        exitCode: null,
        signal: "SIGKILL",
      },
    ]);
  });
});
