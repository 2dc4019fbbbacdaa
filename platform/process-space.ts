import { readFileSync, readlinkSync } from "node:fs";

let cached: string | undefined;

/**
 * The process space this process lives in: the machine's boot (`/proc/sys/kernel/random/boot_id`)
 * and its PID namespace (`/proc/self/ns/pid`), as `proc:<boot id>:<namespace inode>`. A process
 * incarnation (`pid:<pid>:<starttime>`) means something only inside one process space: another
 * machine, a Pod or any other PID namespace numbers its processes on its own, so a pid missing from
 * this `/proc` proves nothing about a process of another space. The process strategy records the
 * space of every host it starts (`host-started` `node`) and proves a kill through `/proc` only in
 * the same space (hosts.md "Kill boundary", docs/security.md "Fencing process hosts").
 *
 * Failure modes: throws when either file cannot be read (not Linux); callers that must prove a kill
 * then cannot, which is the safe answer.
 */
export function processSpace(): string {
  if (cached) return cached;
  const boot = readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim();
  const ns = /^pid:\[(\d+)\]$/.exec(readlinkSync("/proc/self/ns/pid"));
  if (!/^[0-9a-f-]{36}$/.test(boot) || !ns) throw new Error(`unreadable process space (boot ${boot})`);
  cached = `proc:${boot}:${ns[1]}`;
  return cached;
}
