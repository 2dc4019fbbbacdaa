import { describe, expect, inject, it } from "vitest";
import { proofLine, runProof } from "../../proof/run-proof.ts";
import { CONTROL_FLOW_PROOF, DEFAULT_PROOF, type ProofOptions } from "../../proof/scenario-config.ts";

/**
 * The crash-recovery proof (proof-and-bench.md) with every service a real process, real process
 * hosts signalled mid-execution (gated on the durable journal), real nats-server and Redis.
 * PROOF_PARALLEL (default 5) sets P; `make test-proof-long` runs P=20 three times. The custom workload
 * (tenant code: proof/custom-worker.ts) and the zombie variant run at min(P, 3) to keep `make test` short;
 * `drover proof --workload custom` runs it at any P. The control-flow workload (a map and a wait,
 * proof/control-flow-workload.ts) runs at P over both transports.
 */
const P = Number(process.env.PROOF_PARALLEL ?? 5);
const ROUNDS = Number(process.env.PROOF_ROUNDS ?? 1);

async function prove(o: Partial<ProofOptions>): Promise<void> {
  const report = await runProof(
    { ...DEFAULT_PROOF, parallel: P, stepMs: 10, ...o },
    { natsUrl: inject("natsUrl"), redisUrl: `${inject("redisUrl")}/11`, mongoUrl: inject("mongoUrl") },
    () => undefined,
    600_000,
  );
  const line = proofLine(report);
  console.log(
    `${line}\n  kill→suspected p50/p99 ${report.latencies.suspected.p50}/${report.latencies.suspected.p99} ms, →fenced ${report.latencies.fenced.p50}/${report.latencies.fenced.p99} ms, →resumed ${report.latencies.resumed.p50}/${report.latencies.resumed.p99} ms; kill gate: step durable→signal ${report.latencies.gateSignal.p50}/${report.latencies.gateSignal.p99} ms` +
      `\n  time: runs ${report.phasesMs.runs} ms, log assertions ${report.phasesMs.log} ms, read models ${report.phasesMs.readModels} ms${report.logDir ? `; logs kept in ${report.logDir}` : ""}`,
  );
  for (const a of report.assertions.filter((x) => /^(map|fan-in|wait|signals): /.test(x.name)))
    console.log(`  ${a.name}: ${a.detail}`);
  for (const a of report.assertions) expect(a, `${a.name}: ${a.detail}`).toMatchObject({ ok: true });
  if (o.workload === "custom")
    expect(report.assertions.map((a) => a.name)).toContainEqual(expect.stringMatching(/^outputs: /));
  if (o.workload === "control-flow")
    for (const name of [/^map: /, /^fan-in: /, /^wait: /, /^signals: /])
      expect(report.assertions.map((a) => a.name)).toContainEqual(expect.stringMatching(name));
  const parallel = o.parallel ?? P;
  expect(report.runs).toBe(9 * parallel);
  // A run whose dispatch to the runtime failed before the kill (a 3 s timeout on a loaded machine), or
  // that admission had not yet placed when the runtime died, was never in its local queue: placed as
  // ordinary work, classified by the log (proof/send-failed.ts).
  expect(report.recovered + report.sendsFailed + report.notPlaced).toBe(6 * parallel);
  expect(line).toMatch(/duplicates=0 lost=0 safe_leaks=0 fence_violations=0 replay_failures=0 result=PASS$/);
}

describe(`crash-recovery proof at P=${P} (all services and runtimes real)`, () => {
  for (let round = 1; round <= ROUNDS; round++) {
    it.each(["http", "grpc"] as const)(
      `round ${round}: SIGKILLed runtimes: every impacted tenant's work recovered exactly once, safe tenants untouched, over %s`,
      async (transport) => {
        await prove({ transport, seed: round });
      },
    );
  }
  it.each(["http", "grpc"] as const)(
    "custom workload (tenant worker, $ref data flow, object-store outputs): SIGKILLed runtimes' work recovered exactly once, every run's output equal to an uninterrupted run's, over %s",
    async (transport) => {
      await prove({ transport, workload: "custom", parallel: Math.min(P, 3) });
    },
  );
  it.each(["http", "grpc"] as const)(
    "control-flow workload (a map of 6 items, 3 at once, with its fan-in; a wait resolved through POST /v1/runs/:id/signals/:name): runtimes SIGKILLed mid-map, every item completed exactly once, the fan-in got every output in order, each wait resolved once by the allowed token, over %s",
    async (transport) => {
      await prove({ transport, workload: "control-flow", ...CONTROL_FLOW_PROOF });
    },
  );
  it("SIGSTOPped runtimes (zombies): health notices the silence, the fence kills the exact incarnation, and the same guarantees hold", async () => {
    await prove({ transport: "http", signal: "SIGSTOP", parallel: Math.min(P, 3) });
  });
});
