import { execFile } from "node:child_process";
import { resolve } from "node:path";
import { jetstream } from "@nats-io/jetstream";
import { afterEach, beforeEach, describe, expect, inject, it } from "vitest";
import { encodeEvent } from "../../contracts/index.ts";
import { credentialOf } from "../../platform/nats-auth/credentials.ts";
import { serverKeysOf } from "../../platform/nats-auth/server-keys.ts";
import { recordedLog } from "../support/recorded-logs.ts";
import { freshStreams, type StreamsFixture } from "../support/streams.ts";

/**
 * `drover replay` / `drover why` as a child process against a real nats-server: a recorded log is
 * appended into a fresh stream (same order, so the same stream sequences), then the CLI reads it
 * back by subject and must print the causal chain and the verdict with the right exit code.
 */
const ROOT = resolve(import.meta.dirname, "../..");
/**
 * How long one CLI process may take before execFile kills it: it loads the TypeScript CLI through tsx,
 * ~1.2 s of CPU but 5-30 s of wall time at load 30 on 2 cores (2026-12-06, a CI-like run killed it at
 * the former 30 s). A hung CLI fails its call with a message saying so; each test's timeout is what its
 * calls may take (`calls(n)`), not a window the machine must fit them in.
 */
const CLI_CALL_MS = 90_000;
const calls = (n: number) => n * CLI_CALL_MS + 30_000;

describe("drover replay over a real stream (child process)", () => {
  let fx: StreamsFixture;
  beforeEach(async () => {
    fx = await freshStreams(inject("natsUrl"), "cli");
  });
  afterEach(async () => {
    await fx.close();
  });

  async function load(file: string): Promise<void> {
    const js = jetstream(fx.nc);
    for (const r of recordedLog(file)) {
      const subject = r.subject.replace(/^fixture\.drover\./, `${fx.layout.eventPrefix}.`);
      const ack = await js.publish(subject, encodeEvent(r.event));
      // The CLI must print the fixture's sequences: a gap here would make every assertion below wrong.
      expect(ack.seq).toBe(r.seq);
    }
  }

  function drover(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
    const env = {
      ...process.env,
      NATS_URL: inject("natsUrl"),
      // The CLI connects as the read-only operator identity (authentication is on).
      NATS_CREDS: credentialOf(serverKeysOf(inject("natsUrl"))!, "operator"),
      DROVER_STREAM_TAG: fx.layout.eventPrefix.replace(/\.drover$/, ""),
    };
    return new Promise((ok, fail) => {
      execFile(
        process.execPath,
        ["--import", "tsx", "cli/drover.ts", ...args],
        { cwd: ROOT, env, timeout: CLI_CALL_MS },
        (err, stdout, stderr) => {
          if (err?.killed) fail(new Error(`drover ${args.join(" ")} killed after ${CLI_CALL_MS} ms: ${stderr}`));
          else ok({ code: err ? Number((err as { code?: number }).code ?? -1) : 0, stdout, stderr });
        },
      );
    });
  }

  it(
    "a clean run replays to match (exit 0) with its chain from submission through admission candidates, scale-out and steps to completion",
    async () => {
      await load("run-clean.jsonl");
      const r = await drover("replay", "run", "run-clean");
      expect(r.stderr).toBe("");
      expect(r.code).toBe(0);
      expect(r.stdout).toMatch(/#1 +submission +run run-clean +submitted run-clean \(4 step\(s\)/);
      expect(r.stdout).toMatch(/queued globally: no-visible-capacity/);
      expect(r.stdout).toMatch(/scale-out +scaleout so-clean-1 +fulfilled by runtime rt-clean-a/);
      expect(r.stdout).toMatch(
        /admitted to rt-clean-a as lr-clean-1; candidates: rt-clean-a rank 0 — dedicated to t-fixture; 2 free run slots/,
      );
      expect(r.stdout).toMatch(
        /#15-19 +steps +exec exec-\S+ +steps: 4 completed \(a, b, c#2, d\); 1 failed attempt\(s\) \(c#1\)/,
      );
      expect(r.stdout).toMatch(/replay: match \(run run-clean; \d+ events checked\)\n$/);
    },
    calls(1),
  );

  it(
    "a crash+resume incident replays to match (exit 0) showing failure, fence, recovery and the resume under the same execution",
    async () => {
      await load("run-crash-resume.jsonl");
      const r = await drover("replay", "incident", "inc-rt-fixture-a");
      expect(r.code).toBe(0);
      expect(r.stdout).toMatch(/#21 +failure +runtime rt-fixture-a +suspected: host-exited/);
      expect(r.stdout).toMatch(
        /#22 +fence +runtime rt-fixture-a +fenced pid:20114:200998: pid 20114 exited \(SIGKILL\)/,
      );
      expect(r.stdout).toMatch(
        /execution resumed on rt-fixture-b \(lr-fixture-2\) at epoch 1 with 5 steps already done/,
      );
      expect(r.stdout).toMatch(/replay: match \(incident inc-rt-fixture-a; \d+ events checked; 2 recovery item\(s\)\)/);
    },
    calls(1),
  );

  it(
    "a stale-epoch write after paused-for-recovery exits 1 and prints the divergence with its stream sequence, also as JSON",
    async () => {
      await load("run-defect-stale-epoch-write.jsonl");
      const r = await drover("replay", "run", "run-fixture");
      expect(r.code).toBe(1);
      expect(r.stdout).toMatch(
        /replay: DIVERGENCE at seq 25 \[stale-epoch\] in execution exec-5dc444c06c6b79ac0b2cff0e0cabd918: .*at epoch 0 after paused-for-recovery at seq 23/,
      );
      const j = await drover(
        "replay",
        "execution",
        "exec-5dc444c06c6b79ac0b2cff0e0cabd918",
        "--tenant",
        "t-fixture",
        "--json",
      );
      expect(j.code).toBe(1);
      expect(JSON.parse(j.stdout).validation).toMatchObject({
        kind: "divergence",
        divergence: { invariant: "stale-epoch", seq: 25 },
      });
    },
    calls(2),
  );

  it(
    "a write by the fenced incarnation exits 1 at its sequence; why explains where the run is; unknown ids and bad arguments exit 2",
    async () => {
      await load("run-defect-write-after-fenced.jsonl");
      const r = await drover("replay", "incident", "inc-rt-fixture-a");
      expect(r.code).toBe(1);
      expect(r.stdout).toMatch(/replay: DIVERGENCE at seq 23 \[write-after-fenced\]/);
      const why = await drover("why", "run-fixture-q");
      expect(why.code).toBe(0);
      expect(why.stdout).toMatch(/status: completed since seq \d+: run completed by exec-/);
      expect((await drover("replay", "run", "run-nope")).code).toBe(2);
      const bad = await drover("replay", "job", "x");
      expect(bad.code).toBe(2);
      expect(bad.stderr).toMatch(/usage: drover replay <run\|execution\|incident>/);
    },
    calls(4),
  );
});
