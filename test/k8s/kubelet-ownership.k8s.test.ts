import { spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { isSameProcessAlive, processStartTime, signalGroup } from "../../k8s/local-cluster/lib/proc.ts";
import { reapRecords, type ContainerRecord } from "../../k8s/local-cluster/kubelet/state-store.ts";

// The kubelet's clean-up rule with real processes (no API server involved): a record proves
// ownership only with the pid's start time, so a reused pid is never signalled.
const started: { pid: number; startTime: string }[] = [];
afterAll(() => {
  for (const p of started) if (isSameProcessAlive(p.pid, p.startTime)) signalGroup(p.pid, "SIGKILL");
});

function sleeper(): { pid: number; startTime: string } {
  const child = spawn("sleep", ["60"], { detached: true, stdio: "ignore" });
  child.unref();
  const pid = child.pid ?? -1;
  const p = { pid, startTime: processStartTime(pid) ?? "" };
  started.push(p);
  return p;
}

const record = (dir: string, pid: number, startTime: string): ContainerRecord => ({
  podUid: `uid-${pid}`,
  namespace: "ns",
  podName: "p",
  container: "c",
  pid,
  startTime,
  startedAt: "",
  restartCount: 0,
  podIP: "127.0.4.1",
  exitFile: join(dir, "x.exit"),
  logFile: join(dir, "x.log"),
});

describe("the process kubelet's proof of ownership, with real processes (the local cluster's kubelet state dir)", () => {
  it("stops a recorded process whose pid and start time match, and never one whose start time differs", async () => {
    const dir = await mkdtemp(join(tmpdir(), "drover-kubelet-state-"));
    try {
      const ours = sleeper();
      const stranger = sleeper();
      await reapRecords(
        dir,
        [record(dir, ours.pid, ours.startTime), record(dir, stranger.pid, `${Number(stranger.startTime) - 1}`)],
        2_000,
      );
      expect(isSameProcessAlive(ours.pid, ours.startTime)).toBe(false);
      expect(isSameProcessAlive(stranger.pid, stranger.startTime)).toBe(true);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
