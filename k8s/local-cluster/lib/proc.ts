import { readFileSync } from "node:fs";

/**
 * Linux /proc helpers used to prove a pid is still the process we started: a pid alone can be
 * reused, the pair (pid, start time in clock ticks since boot) cannot while the machine is up.
 */

/** Field 22 of /proc/<pid>/stat (start time) and field 3 (state), or undefined if there is no such pid. */
function readStat(pid: number): { state: string; startTime: string } | undefined {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, "utf8");
  } catch {
    return undefined;
  }
  // The command name (field 2) is in parentheses and may contain spaces; split after its last ')'.
  const rest = text.slice(text.lastIndexOf(")") + 2).split(" ");
  const state = rest[0];
  const startTime = rest[19];
  if (state === undefined || startTime === undefined) return undefined;
  return { state, startTime };
}

/** The start time of a live process, or undefined when it does not exist (or is a zombie). */
export function processStartTime(pid: number): string | undefined {
  const s = readStat(pid);
  return s === undefined || s.state === "Z" || s.state === "X" ? undefined : s.startTime;
}

/**
 * True when pid names a live (non-zombie) process that started at `startTime`. A zombie counts as
 * exited: its parent may be gone (we were restarted) and nobody may ever reap it.
 */
export function isSameProcessAlive(pid: number, startTime: string): boolean {
  return processStartTime(pid) === startTime;
}

/** Sends a signal to a whole process group; false when the group no longer exists. */
export function signalGroup(pgid: number, signal: NodeJS.Signals): boolean {
  try {
    process.kill(-pgid, signal);
    return true;
  } catch {
    return false;
  }
}

/** Sends a signal to one process; false when it no longer exists. */
export function signalProcess(pid: number, signal: NodeJS.Signals): boolean {
  try {
    process.kill(pid, signal);
    return true;
  } catch {
    return false;
  }
}
