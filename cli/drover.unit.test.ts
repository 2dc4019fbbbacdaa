import { describe, expect, it } from "vitest";
import { recordedLog } from "../test/support/recorded-logs.ts";
import { EXIT, type Command, type CommandIo } from "./commands/command.ts";
import { COMMANDS } from "./commands/index.ts";
import { parseProofArgs } from "./commands/proof.ts";
import { whyFacts } from "./commands/why.ts";
import { main } from "./drover.ts";
import { causalChain } from "./lib/causal-chain.ts";

// Unit: argument handling never touches NATS (the environment points nowhere on purpose).
function io() {
  const out: string[] = [],
    err: string[] = [];
  const x: CommandIo = { out: (t) => out.push(t), err: (t) => err.push(t), env: { NATS_URL: "nats://127.0.0.1:1" } };
  return { x, out: () => out.join(""), err: () => err.join("") };
}

describe("drover argument handling", () => {
  it("--help exits 0 on every command (admin tools, runs and each runs subcommand) without touching NATS or the API", async () => {
    for (const argv of [
      ["replay", "--help"],
      ["admin", "why", "-h"],
      ["admin", "--help"],
      ["runs", "--help"],
      ...[
        "submit",
        "list",
        "get",
        "watch",
        "wait",
        "events",
        "cancel",
        "rerun",
        "fork",
        "bulk-cancel",
        "bulk-fork",
        "upgrade",
      ].map((c) => ["runs", c, "--help"]),
      ["cache", "list", "--help"],
      ["cache", "clear", "--help"],
      ["runtimes", "--help"],
      ["admin", "step-cache-rebuild", "--help"],
    ]) {
      const o = io();
      expect(await main(argv, o.x), argv.join(" ")).toBe(EXIT.ok);
      expect(o.out(), argv.join(" ")).toMatch(/usage/i);
    }
  });

  it("runs without an API URL and token, with a bad option, or a missing argument is a usage error (exit 2)", async () => {
    for (const argv of [
      ["runs", "list"],
      ["runs", "get"],
      ["runs", "list", "--bogus"],
      ["runs", "list", "-o", "yaml"],
    ]) {
      const o = io();
      expect(await main(argv, o.x), argv.join(" ")).toBe(EXIT.usage);
    }
  });

  it("an unknown command, a missing kind, an id that is not a drover id, --tenant on an incident, and bad capacity-rebuild flags are usage errors (exit 2) before any read or request", async () => {
    for (const argv of [
      ["frobnicate"],
      ["replay"],
      ["replay", "run"],
      ["replay", "run", "a.>"],
      ["replay", "run", "r1", "--tenant", "T*"],
      ["replay", "run", "r1", "--bogus"],
      ["why"],
      ["capacity-rebuild", "extra"],
      ["capacity-rebuild", "--timeout-ms", "0"],
      ["capacity-rebuild", "--control-plane", "Not.An-Id"],
    ]) {
      const o = io();
      expect(await main(argv, o.x), argv.join(" ")).toBe(EXIT.usage);
      expect(o.err()).toMatch(/usage|unknown command/);
    }
  });

  it("each lazily loaded command's name, summary and usage in the help are its module's own", async () => {
    const modules = {
      replay: (await import("./commands/replay.ts")).replayCommand,
      why: (await import("./commands/why.ts")).whyCommand,
      "capacity-rebuild": (await import("./commands/capacity-rebuild.ts")).capacityRebuildCommand,
      "forensics-rebuild": (await import("./commands/forensics-rebuild.ts")).forensicsRebuildCommand,
      "step-cache-rebuild": (await import("./commands/step-cache-rebuild.ts")).stepCacheRebuildCommand,
      setup: (await import("./commands/setup.ts")).setupCommand,
      compact: (await import("./commands/compact.ts")).compactCommand,
    };
    const meta = ({ name, summary, usage }: Command) => ({ name, summary, usage });
    expect(COMMANDS.filter((c) => c.name !== "proof").map(meta)).toEqual(Object.values(modules).map(meta));
  });

  it("help lists every command with the exit codes and exits 0; no command at all is a usage error", async () => {
    const o = io();
    expect(await main(["help"], o.x)).toBe(EXIT.ok);
    expect(o.out()).toMatch(/replay .*\n.*why /);
    expect(o.out()).toMatch(/capacity-rebuild +rebuild a control plane's Redis capacity view from stream sequence 1/);
    expect(o.out()).toMatch(/exit codes: 0 ok\/match, 1 replay divergence, 2 usage error/);
    expect(await main([], io().x)).toBe(EXIT.usage);
  });

  it("`drover admin proof --parallel 10 --nats-cluster 3 --kill-nats-leader` (issue 16's flag names) reaches the proof command with those flags, which parse to a 3-node cluster whose leader is killed (no server started: the proof's run is replaced)", async () => {
    const seen: (readonly string[])[] = [];
    const commands = COMMANDS.map((c) =>
      c.name === "proof" ? { ...c, run: async (args: readonly string[]) => (seen.push(args), EXIT.ok) } : c,
    );
    const argv = ["--parallel", "10", "--nats-cluster", "3", "--kill-nats-leader"];
    expect(await main(["admin", "proof", ...argv], io().x, commands)).toBe(EXIT.ok);
    expect(await main(["proof", ...argv], io().x, commands)).toBe(EXIT.ok);
    expect(seen).toEqual([argv, argv]);
    const { options } = parseProofArgs(seen[0]!);
    expect(options).toMatchObject({ parallel: 10, natsCluster: 3, killNatsLeader: true });
    expect(() => parseProofArgs(["--kill-nats-leader"])).toThrow(/--kill-nats-leader needs --nats-cluster 3/);
    const help = io();
    expect(await main(["admin", "proof", "--help"], help.x)).toBe(EXIT.ok);
    expect(help.out()).toMatch(/--nats-cluster 3 \[--kill-nats-leader\]/);
  });

  it("an unreachable stream is exit 3, never 0 or a divergence", async () => {
    const o = io();
    expect(await main(["replay", "run", "r1"], o.x)).toBe(EXIT.unavailable);
    expect(o.err()).toMatch(/cannot reach NATS at nats:\/\/127\.0\.0\.1:1/);
  });
});

describe("causal chain and why, from a recorded log", () => {
  it("consecutive step events of one execution collapse into one entry spanning their sequences; other events stay one per line", () => {
    const chain = causalChain(recordedLog("run-clean.jsonl"));
    expect(chain.filter((e) => e.phase === "steps").map((e) => [e.seq, e.toSeq])).toEqual([
      [14, undefined],
      [15, 19],
    ]); // exec.started, then the summary
    expect(chain).toHaveLength(21 - 4);
  });

  it("why names the global-queue reason and the scale-out request state of a run still waiting for capacity", () => {
    const waiting = recordedLog("run-clean.jsonl").filter((r) => r.seq <= 5);
    expect(whyFacts("run-clean", waiting)).toMatchObject({
      status: expect.stringMatching(/^queued since seq 3/),
      "last reason": "no-visible-capacity",
      "queued globally": expect.stringMatching(/^seq 2: queued globally: no-visible-capacity/),
      "scale-out requests": [expect.stringMatching(/^so-clean-1: observed at seq 5/)],
    });
  });
});
