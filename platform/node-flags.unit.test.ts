import { describe, expect, it } from "vitest";
import { cpuProfFlags, DEFAULT_NODE_FLAGS, nodeFlags } from "./node-flags.ts";

// Pure: reads an environment object; proves no transport. The services and runtimes that
// start with these flags are started by the e2e, proof and k8s tiers and by `make run`'s test.
describe("node flags of a started process (pure: proves no transport)", () => {
  it("is the default without DROVER_NODE_FLAGS", () => {
    expect(nodeFlags("api", {})).toEqual(DEFAULT_NODE_FLAGS);
  });

  it("DROVER_NODE_FLAGS replaces the default everywhere, DROVER_NODE_FLAGS_<NAME> for one kind", () => {
    const env = {
      DROVER_NODE_FLAGS: " --single-threaded-gc  --max-semi-space-size=32 ",
      DROVER_NODE_FLAGS_RUNTIME: "",
    };
    expect(nodeFlags("api", env)).toEqual(["--single-threaded-gc", "--max-semi-space-size=32"]);
    expect(nodeFlags("runtime", env)).toEqual([]);
    expect(nodeFlags("node-other", { DROVER_NODE_FLAGS_NODE_OTHER: "--x" })).toEqual(["--x"]);
  });
  it("cpuProfFlags: none without DROVER_CPU_PROF_DIR; every kind, or the kinds DROVER_CPU_PROF_SERVICES names, with the interval", () => {
    expect(cpuProfFlags("runtime", {})).toEqual([]);
    const dir = { DROVER_CPU_PROF_DIR: "/p" };
    expect(cpuProfFlags("api", dir)).toEqual(["--cpu-prof", "--cpu-prof-dir=/p"]);
    const only = { ...dir, DROVER_CPU_PROF_SERVICES: "api,runtime", DROVER_CPU_PROF_INTERVAL_US: "100" };
    expect(cpuProfFlags("runtime", only)).toEqual(["--cpu-prof", "--cpu-prof-dir=/p", "--cpu-prof-interval=100"]);
    expect(cpuProfFlags("admission", only)).toEqual([]);
  });
});
