import { readFileSync } from "node:fs";
import { HostIncarnation } from "../contracts/index.ts";

/**
 * The physical failure boundary of a process host: `pid:<pid>:<starttime>`, where starttime is field 22
 * of `/proc/<pid>/stat` (clock ticks since boot). A pid is reused by the kernel; pid plus start time is
 * not, so the provisioner (for a child it spawned) and the runtime (for itself) compute the same value
 * and a kill can prove it hit exactly this incarnation (hosts.md "Common lifecycle rules").
 *
 * Failure modes: throws when `/proc/<pid>/stat` cannot be read (no such process, not Linux) or does not
 * parse; callers treat that as "the incarnation is gone or unknowable", never as a match.
 */
export function processIncarnation(pid: number): HostIncarnation {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  return HostIncarnation.parse(`pid:${pid}:${startTimeFromStat(stat)}`);
}

/**
 * Field 22 (starttime) of a `/proc/<pid>/stat` line. Field 2 (comm) is parenthesised and may contain
 * spaces and parentheses, so fields are counted after the last `)`.
 */
export function startTimeFromStat(stat: string): string {
  const close = stat.lastIndexOf(")");
  if (close < 0) throw new Error(`unparseable /proc stat line: ${stat.slice(0, 80)}`);
  // After ") " comes field 3 (state); starttime is field 22, i.e. index 19 of the rest.
  const rest = stat
    .slice(close + 2)
    .trim()
    .split(/\s+/);
  const start = rest[19];
  if (start === undefined || !/^\d+$/.test(start))
    throw new Error(`no starttime in /proc stat line: ${stat.slice(0, 80)}`);
  return start;
}

/** The HostIncarnation of this process: `pod:<uid>` when a pod UID is given, else `pid:<pid>:<start>`. */
export function selfIncarnation(podUid: string | undefined): HostIncarnation {
  return podUid ? HostIncarnation.parse(`pod:${podUid}`) : processIncarnation(process.pid);
}
