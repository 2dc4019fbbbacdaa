import { readdirSync, readFileSync, readlinkSync } from "node:fs";

/** Inodes of the TCP sockets listening on `port` (any local address) in this network namespace. */
function listeningInodes(port: number): Set<string> {
  const hex = `:${port.toString(16).toUpperCase().padStart(4, "0")}`;
  const inodes = new Set<string>();
  for (const table of ["/proc/net/tcp", "/proc/net/tcp6"]) {
    let text: string;
    try {
      text = readFileSync(table, "utf8");
    } catch {
      continue; // no IPv6 in this kernel or namespace
    }
    for (const line of text.split("\n").slice(1)) {
      // sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode …; st 0A is LISTEN
      const f = line.trim().split(/\s+/);
      if (f.length > 9 && f[3] === "0A" && f[1]!.endsWith(hex)) inodes.add(f[9]!);
    }
  }
  return inodes;
}

/**
 * Whether process `pid` itself holds a socket listening on TCP `port` (its open descriptors name
 * a listening socket's inode). The endpoint layer's proof for a process host: the runtime binds a
 * port the kernel picks (port 0, so no other process can take it between a choice and the bind)
 * and announces it; the announcement counts only if that exact process listens there.
 * Failure modes: none thrown; a process that is gone or unreadable gives false.
 */
export function listensOn(pid: number, port: number): boolean {
  const inodes = listeningInodes(port);
  if (inodes.size === 0) return false;
  let fds: string[];
  try {
    fds = readdirSync(`/proc/${pid}/fd`);
  } catch {
    return false;
  }
  return fds.some((fd) => {
    try {
      const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
      return m !== null && inodes.has(m[1]!);
    } catch {
      return false; // closed meanwhile
    }
  });
}
