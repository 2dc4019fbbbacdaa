import type { KillResult } from "./types.ts";
import { incarnationState, leadsOwnGroup } from "./proc-table.ts";

const POLL_MS = 10;

/**
 * Kills a process that is not our child, identified by its exact incarnation, and returns only
 * when `/proc` shows that incarnation gone (no such pid, a zombie, or the pid reused by a process
 * with another start time). Used after a provisioner restart (the runtime outlived its parent) and
 * by services that never spawned the runtime. SIGKILL: a runtime that ignores SIGTERM must not
 * delay the boundary.
 *
 * The check-then-signal has a window of microseconds in which the pid could be reused; Node has no
 * pidfd, so we re-check the start time immediately before signalling and never signal a pid whose
 * start time differs. Failure modes: `timeout` when the incarnation is still running at the
 * deadline (e.g. uninterruptible sleep); signal errors other than ESRCH are rethrown.
 */
export async function killExactIncarnation(
  pid: number,
  startTime: string,
  budgetMs: number,
  now: () => number = Date.now,
): Promise<KillResult> {
  const deadline = now() + budgetMs;
  let signal: string | null = null;
  if (incarnationState(pid, startTime) === "running") {
    try {
      // A detached runtime leads its own group: take its helpers (e.g. tsx's esbuild service) with it.
      process.kill(leadsOwnGroup(pid, startTime) ? -pid : pid, "SIGKILL");
      signal = "SIGKILL";
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "ESRCH") throw e;
    }
  }
  for (;;) {
    if (incarnationState(pid, startTime) === "gone")
      return { outcome: "killed", proof: { kind: "process-exit", pid, exitCode: null, signal } };
    if (now() >= deadline)
      return { outcome: "timeout", detail: `pid ${pid} (start ${startTime}) still running after ${budgetMs} ms` };
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
}
