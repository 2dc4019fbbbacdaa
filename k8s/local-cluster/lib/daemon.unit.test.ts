import { mkdtemp, rm } from "node:fs/promises";
import { readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { componentNice, daemonAlive, startDaemon, stopDaemon } from "./daemon.ts";

/** Field 19 of /proc/<pid>/stat: the nice value (fields after the parenthesised command name). */
const niceOf = (pid: number): number => {
  const text = readFileSync(`/proc/${pid}/stat`, "utf8");
  return Number(text.slice(text.lastIndexOf(")") + 2).split(" ")[16]);
};

describe("startDaemon", () => {
  let dir = "";
  afterEach(async () => {
    if (dir) await stopDaemon(join(dir, "d.json"), 2_000);
    if (dir) await rm(dir, { recursive: true, force: true });
    dir = "";
  });

  it("starts the command itself at the nice value asked for: the recorded pid is the daemon, stoppable as before", async () => {
    dir = await mkdtemp(join(tmpdir(), "drover-daemon-"));
    // A positive nice value: no privilege needed to lower one's own priority.
    const rec = await startDaemon("sleeper", "sleep", ["30"], {
      logFile: join(dir, "d.log"),
      recordFile: join(dir, "d.json"),
      nice: 7,
    });
    // `nice` execs the command: same pid, whose command line is the daemon's, not nice's.
    await expect.poll(() => readFileSync(`/proc/${rec.pid}/cmdline`, "utf8").split("\0")[0]).toBe("sleep");
    expect(niceOf(rec.pid)).toBe(7);
    expect(daemonAlive(rec)).toBe(true);
    await stopDaemon(join(dir, "d.json"), 2_000);
    expect(daemonAlive(rec)).toBe(false);
  });

  it("without a nice value the daemon keeps the caller's", async () => {
    dir = await mkdtemp(join(tmpdir(), "drover-daemon-"));
    const rec = await startDaemon("sleeper", "sleep", ["30"], {
      logFile: join(dir, "d.log"),
      recordFile: join(dir, "d.json"),
    });
    expect(niceOf(rec.pid)).toBe(niceOf(process.pid));
  });
});

describe("componentNice", () => {
  const saved = process.env.DROVER_K8S_NICE;
  afterEach(() => {
    if (saved === undefined) delete process.env.DROVER_K8S_NICE;
    else process.env.DROVER_K8S_NICE = saved;
  });

  it("is 0 (the default priority) unless DROVER_K8S_NICE names a nice value", () => {
    delete process.env.DROVER_K8S_NICE;
    expect(componentNice()).toBe(0);
    process.env.DROVER_K8S_NICE = "-10";
    expect(componentNice()).toBe(-10);
    process.env.DROVER_K8S_NICE = "5";
    expect(componentNice()).toBe(5);
    for (const bad of ["x", "-21", "20", "1.5"]) {
      process.env.DROVER_K8S_NICE = bad;
      expect(componentNice()).toBe(0);
    }
  });
});
