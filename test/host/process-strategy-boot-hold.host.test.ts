import { readFileSync } from "node:fs";
import { afterAll, describe, expect, it } from "vitest";
import { createProcessStrategy, type ProcessHostStrategy } from "../../platform/hosts/process-strategy.ts";
import { RUNTIME_LOGS } from "../support/host-processes.ts";

// Real processes, no NATS: a stand-in pool member (test/support/fake-runtime.mjs, mode `pool`) whose
// boot the strategy holds; proves process states, not the runtime's bind or command transport.
const strategies: ProcessHostStrategy[] = [];
function strategy(bootMs: number): ProcessHostStrategy {
  const s = createProcessStrategy({
    command: [process.execPath, "test/support/fake-runtime.mjs"],
    baseEnv: { PATH: process.env.PATH ?? "", FAKE_RUNTIME_MODE: "pool", FAKE_BOOT_MS: String(bootMs) },
    startupTimeoutMs: 20_000,
    logDir: RUNTIME_LOGS,
  });
  strategies.push(s);
  return s;
}
afterAll(async () => {
  await Promise.all(strategies.map((s) => s.killAll()));
});

/** The kernel's state letter of `pid` (`T`: stopped), or undefined once it is gone. */
function stateOf(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[0];
  } catch {
    return undefined;
  }
}

describe("process strategy: booting pool members held and continued (real processes)", () => {
  it("a held member stays stopped and unannounced until it is continued, then becomes ready", async () => {
    const s = strategy(200);
    let pid = 0;
    let held = -1;
    let heldBeforeRecord = -1;
    const t0 = Date.now();
    const start = s.startPooled("pool-hold-a", "pool-token-0123456789", async (h) => {
      pid = h.pid as number;
      // Not holdable while its host is being recorded (a successor could not find it stopped).
      heldBeforeRecord = s.holdBoots(true);
      // Holdable once the hook has returned (the host recorded).
      setTimeout(() => (held = s.holdBoots(true)), 0);
    });
    let settled = false;
    void start.finally(() => (settled = true));
    await new Promise((r) => setTimeout(r, 1_500));
    expect([heldBeforeRecord, held, stateOf(pid), settled]).toEqual([0, 1, "T", false]);
    expect(s.holdBoots(true)).toBe(0); // already held: not signalled twice
    expect(s.holdBoots(false)).toBe(1);
    const r = await start;
    expect(r.outcome).toBe("created");
    expect(Date.now() - t0).toBeGreaterThanOrEqual(1_500);
    expect(stateOf(pid)).not.toBe("T");
    // Ready: no longer booting, so a later hold leaves it alone.
    expect(s.holdBoots(true)).toBe(0);
    expect(stateOf(pid)).not.toBe("T");
    s.holdBoots(false);
  });

  it("a member killed while held is gone (SIGKILL ends a stopped process) and its start fails", async () => {
    const s = strategy(200);
    let pid = 0;
    const start = s.startPooled("pool-hold-b", "pool-token-0123456789", async (h) => {
      pid = h.pid as number;
      setTimeout(() => s.holdBoots(true), 0);
    });
    await new Promise((r) => setTimeout(r, 500));
    expect(stateOf(pid)).toBe("T");
    await s.killAll(5_000);
    const r = await start;
    expect(r.outcome).toBe("rejected");
    expect(stateOf(pid)).toBeUndefined();
    expect(s.holdBoots(false)).toBe(0);
  });
});
