import { describe, expect, it } from "vitest";
import { DEFAULT_NODE_FLAGS, nodeFlags } from "./node-flags.ts";

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
});
