import { readFileSync } from "node:fs";
import { startTimeFromStat } from "../process-incarnation.ts";

/**
 * What `/proc` says about one process incarnation. A pid alone is reused by the kernel; the pair
 * (pid, starttime) is not while the machine is up, so every question here is asked of the pair.
 */
export type IncarnationState = "running" | "gone";

/** `pid:<pid>:<starttime>` split into its parts; undefined for anything else (e.g. `pod:<uid>`). */
export function parseProcessIncarnation(incarnation: string): { pid: number; startTime: string } | undefined {
  const m = /^pid:(\d+):(\d+)$/.exec(incarnation);
  if (!m) return undefined;
  const pid = Number(m[1]);
  return Number.isSafeInteger(pid) && pid > 0 ? { pid, startTime: m[2] as string } : undefined;
}

/**
 * Whether the exact incarnation can still run. `gone` when `/proc/<pid>/stat` does not exist, the
 * process is a zombie (dead; it only waits to be reaped, possibly forever if its parent died) or
 * dead (`X`), or the pid now belongs to a process with another start time (the pid was reused).
 * Failure modes: none; an unreadable or unparseable stat counts as gone only when the file is
 * missing; any other read error is rethrown (we cannot prove anything about the process).
 */
export function incarnationState(pid: number, startTime: string): IncarnationState {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT" || (e as NodeJS.ErrnoException).code === "ESRCH") return "gone";
    throw e;
  }
  const state = stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3);
  if (state === "Z" || state === "X" || state === "x") return "gone";
  return startTimeFromStat(stat) === startTime ? "running" : "gone";
}

/**
 * True when the exact incarnation is running and leads its own process group (it was spawned
 * detached), so signalling the group reaches exactly what it spawned and nothing else.
 */
export function leadsOwnGroup(pid: number, startTime: string): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const rest = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return startTimeFromStat(stat) === startTime && rest[2] === String(pid);
  } catch {
    return false;
  }
}
