import { describe, expect, inject, it } from "vitest";
import { proofLine, runProof } from "../../proof/run-proof.ts";
import { DEFAULT_PROOF } from "../../proof/scenario-config.ts";

/**
 * The crash-recovery proof (proof-and-bench.md) with every service a real process, real process
 * hosts killed with SIGKILL mid-execution, real nats-server and Redis.
 */
describe("crash-recovery proof (all services and runtimes real; SIGKILL gated on the durable journal)", () => {
  it.each(["http", "grpc"] as const)("recovers every impacted tenant's work exactly once and leaves the safe tenant untouched at P=2 over %s", async (transport) => {
    const report = await runProof({ ...DEFAULT_PROOF, parallel: 2, transport, stepMs: 10 }, { natsUrl: inject("natsUrl"), redisUrl: `${inject("redisUrl")}/11` },
      () => undefined, 240_000);
    const line = proofLine(report);
    console.log(line);
    for (const a of report.assertions) expect(a, a.detail).toMatchObject({ ok: true });
    expect(report.kills).toHaveLength(4);
    expect(line).toMatch(/duplicates=0 lost=0 safe_leaks=0 fence_violations=0 replay_failures=0 result=PASS$/);
  });
});
