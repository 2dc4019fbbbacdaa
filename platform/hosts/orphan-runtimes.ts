import { readdirSync, readlinkSync } from "node:fs";

/**
 * Signals (SIGKILL unless told) every process whose standard output is a file under `logDir`: the
 * runtimes a test control plane's provisioners started (their stdout is their log in `<dir>/runtimes`,
 * process-strategy.ts). A provisioner stops its own runtimes when it stops; the runtimes of a replica
 * SIGKILLed during a chaos test have no provisioner left to stop them, and outlived the test (14 after
 * one CI run). SIGTERM: a profiled stop's drain (control-plane-processes.ts). Only the processes writing
 * into this control plane's own directory are touched. Linux (`/proc`); returns the pids signalled.
 */
export function killProcessesLoggingUnder(logDir: string, signal: NodeJS.Signals = "SIGKILL"): number[] {
  const killed: number[] = [];
  const prefix = logDir.endsWith("/") ? logDir : `${logDir}/`;
  for (const name of readdirSync("/proc")) {
    const pid = Number(name);
    if (!Number.isSafeInteger(pid) || pid <= 1 || pid === process.pid) continue;
    let out: string;
    try {
      out = readlinkSync(`/proc/${pid}/fd/1`);
    } catch {
      continue; // gone meanwhile, or not ours to read
    }
    if (!out.startsWith(prefix)) continue;
    try {
      process.kill(pid, signal);
      killed.push(pid);
    } catch {
      // exited meanwhile
    }
  }
  return killed;
}
