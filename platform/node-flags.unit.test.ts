import { execFileSync } from "node:child_process";
import { resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { DEFAULT_NODE_FLAGS, nodeFlags } from "./node-flags.mjs";

const ROOT = resolve(import.meta.dirname, "..");

// Pure: reads an environment object and argv; proves no transport. The services and runtimes that
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

  it("prints one kind's flags for scripts/run.sh", () => {
    const out = (env: Record<string, string>) =>
      execFileSync(process.execPath, [resolve(ROOT, "platform/node-flags.mjs"), "scheduler"], {
        env: { PATH: process.env.PATH ?? "", ...env },
        encoding: "utf8",
      });
    expect(out({})).toBe(`${DEFAULT_NODE_FLAGS.join(" ")}\n`);
    expect(out({ DROVER_NODE_FLAGS: "--a", DROVER_NODE_FLAGS_SCHEDULER: "--b --c" })).toBe("--b --c\n");
  });
});
