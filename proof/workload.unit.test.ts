import { describe, expect, it } from "vitest";
import { DagDefinition } from "../contracts/index.ts";
import { parseProofArgs } from "../cli/commands/proof.ts";
import { expectedRunDigest } from "./custom-outputs.ts";
import { proofConfig } from "./scenario-config.ts";
import { proofDag, STORED_PAD } from "./workload.ts";
import { controlFlowDag, controlFlowInput } from "./control-flow-workload.ts";

/** The proof's workloads as data (pure: proves no transport; the proof tier runs them). */
describe("proof workloads", () => {
  it("the custom chain is a valid DAG of custom steps and sleeps, each step reading its predecessor by $ref, some padded past the inline limit", () => {
    const dag = DagDefinition.parse(proofDag(50, 10, 1, "custom"));
    const kinds = new Set(dag.steps.map((s) => (s.kind === "custom" ? s.handler : s.kind)));
    expect(kinds).toEqual(new Set(["chain-work", "chain-flaky", "sleep"]));
    for (const [i, s] of dag.steps.entries()) {
      if (s.kind !== "custom" || i === 0) continue;
      expect(s.params).toMatchObject({ prev: { $ref: `steps.${dag.steps[i - 1]!.id}.output` } });
    }
    expect(dag.steps.filter((s) => (s.params as { pad?: number }).pad === STORED_PAD).length).toBeGreaterThan(0);
  });

  it("the built-in chain keeps its kinds and places: flaky every 7th, sleep every 11th, compute otherwise", () => {
    const dag = proofDag(50, 10, 1);
    expect(dag.steps.filter((s) => s.kind === "flaky").map((s) => s.id)).toEqual([
      "s007",
      "s014",
      "s021",
      "s028",
      "s035",
      "s042",
      "s049",
    ]);
    expect(dag.steps.filter((s) => s.kind === "sleep").map((s) => s.id)).toEqual(["s005", "s016", "s027", "s038"]);
    expect(dag.steps.every((s) => s.kind !== "custom")).toBe(true);
  });

  it("holds the step after the kill point: it becomes a sleep of the hold time, the chain otherwise unchanged", () => {
    const plain = proofDag(50, 10, 1, "custom");
    const held = proofDag(50, 10, 1, "custom", [{ index: 25, ms: 2000 }]);
    expect(held.steps[25]).toEqual({ id: "s026", kind: "sleep", dependsOn: ["s025"], params: { durationMs: 2000 } });
    expect(held.steps.filter((_, i) => i !== 25)).toEqual(plain.steps.filter((_, i) => i !== 25));
  });

  it("the expected output of an uninterrupted custom run depends on every step (another seed, another digest)", () => {
    expect(expectedRunDigest(proofDag(50, 10, 1, "custom"))).toMatch(/^[0-9a-f]{64}$/);
    expect(expectedRunDigest(proofDag(50, 10, 1, "custom"))).toBe(expectedRunDigest(proofDag(50, 10, 1, "custom")));
    expect(expectedRunDigest(proofDag(50, 10, 2, "custom"))).not.toBe(expectedRunDigest(proofDag(50, 10, 1, "custom")));
  });

  it("drover proof takes --workload builtin|custom|control-flow (builtin by default) and refuses anything else", () => {
    expect(parseProofArgs([]).options.workload).toBe("builtin");
    expect(parseProofArgs(["--workload", "custom"]).options.workload).toBe("custom");
    expect(() => parseProofArgs(["--workload", "mine"])).toThrow(/--workload must be builtin, custom or control-flow/);
  });

  it("--workload control-flow: 6 map items and a kill after 2 by default; 3 workers for the run and an approver token per tenant", () => {
    const o = parseProofArgs(["--workload", "control-flow"]).options;
    expect(o).toMatchObject({ workload: "control-flow", steps: 6, killAfterSteps: 2 });
    expect(parseProofArgs(["--workload", "control-flow", "--steps", "10", "--kill-after", "4"]).options).toMatchObject({
      steps: 10,
      killAfterSteps: 4,
    });
    const c = proofConfig({ ...o, parallel: 1 });
    expect(c.tenants?.[0]).toMatchObject({
      workersPerInstance: 3,
      maxWorkersPerRun: 3,
      maxConcurrentRunsPerInstance: 1,
    });
    expect(c.tenants?.[0]?.worker?.kinds).toEqual(["cf-item", "cf-fanin"]);
    expect(Object.values(c.tokens ?? {})).toContainEqual({ role: "tenant", tenantId: "p0-imp-a", name: "approver" });
  });

  it("the control-flow DAG validates (map, fan-in by $ref, wait with resolvers, when); the held input keeps the items in flight at the kill long", () => {
    expect(DagDefinition.safeParse(controlFlowDag(10)).success).toBe(true);
    expect(controlFlowInput(6, 10).items.map((x) => x.ms)).toEqual([10, 10, 10, 10, 10, 10]);
    expect(controlFlowInput(6, 10, { from: 2, ms: 5000 }).items.map((x) => x.ms)).toEqual([
      10, 10, 5000, 5000, 5000, 10,
    ]);
  });

  it("drover proof takes --host-startups H into the provisioner's maxConcurrentHostStartups (4 by default)", () => {
    expect(proofConfig(parseProofArgs([]).options).maxConcurrentHostStartups).toBe(4);
    expect(proofConfig(parseProofArgs(["--host-startups", "12"]).options).maxConcurrentHostStartups).toBe(12);
    expect(() => parseProofArgs(["--host-startups", "0"])).toThrow(/--host-startups must be an integer/);
  });

  it("drover proof takes --warm-pool N into the config's warmPool for its host provider (none by default; Kubernetes: pod-ip only)", () => {
    expect(proofConfig(parseProofArgs([]).options).warmPool).toBeUndefined();
    const k8s = ["--host", "kubernetes", "--warm-pool", "12"];
    expect(proofConfig(parseProofArgs(k8s).options).warmPool).toEqual({ kubernetes: 12 });
    expect(proofConfig(parseProofArgs(["--warm-pool", "3"]).options).warmPool).toEqual({ process: 3 });
    expect(() => parseProofArgs([...k8s, "--exposure", "gateway"])).toThrow(/needs --exposure pod-ip/);
    expect(() => parseProofArgs(["--warm-pool", "65"])).toThrow(/at most 64/);
  });

  it("drover proof takes --nats-cluster 3 and --kill-nats-leader (one server by default; the kill needs the cluster; no even sizes)", () => {
    expect(parseProofArgs([]).options.natsCluster).toBeUndefined();
    expect(parseProofArgs(["--nats-cluster", "3", "--kill-nats-leader"]).options).toMatchObject({
      natsCluster: 3,
      killNatsLeader: true,
    });
    expect(parseProofArgs(["--nats-cluster", "3"]).options.killNatsLeader).toBeUndefined();
    expect(() => parseProofArgs(["--kill-nats-leader"])).toThrow(/--kill-nats-leader needs --nats-cluster 3/);
    expect(() => parseProofArgs(["--nats-cluster", "2"])).toThrow(/odd number/);
  });
});
