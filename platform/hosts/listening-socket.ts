import { readdirSync, readFileSync, readlinkSync } from "node:fs";

/** The kernel's TCP tables, IPv4 first: a runtime bound to 127.0.0.1 is found without reading the IPv6 one. */
const TABLES = ["/proc/net/tcp", "/proc/net/tcp6"] as const;

/** Inodes of the TCP sockets listening on `port` (any local address) in one table of this network namespace. */
function listeningInodes(table: string, port: number): Set<string> {
  const hex = `:${port.toString(16).toUpperCase().padStart(4, "0")}`;
  const inodes = new Set<string>();
  let text: string;
  try {
    text = readFileSync(table, "utf8");
  } catch {
    return inodes; // no IPv6 in this kernel or namespace
  }
  for (const line of text.split("\n").slice(1)) {
    // sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode …; st 0A is LISTEN
    const f = line.trim().split(/\s+/);
    if (f.length > 9 && f[3] === "0A" && f[1]!.endsWith(hex)) inodes.add(f[9]!);
  }
  return inodes;
}

/** The inodes of the sockets process `pid` holds open (empty when it is gone or unreadable). */
function socketInodes(pid: number): Set<string> {
  const inodes = new Set<string>();
  let fds: string[];
  try {
    fds = readdirSync(`/proc/${pid}/fd`);
  } catch {
    return inodes;
  }
  for (const fd of fds) {
    try {
      const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
      if (m) inodes.add(m[1]!);
    } catch {
      // closed meanwhile
    }
  }
  return inodes;
}

/**
 * Whether process `pid` itself holds a socket listening on TCP `port` (its open descriptors name
 * a listening socket's inode). The endpoint layer's proof for a process host: the runtime binds a
 * port the kernel picks (port 0, so no other process can take it between a choice and the bind)
 * and announces it; the announcement counts only if that exact process listens there.
 * The kernel takes ~4 ms per table to write one even when it lists a few sockets (it walks its
 * socket hash), in the caller's event loop: the IPv6 table is read only when the IPv4 one does not
 * prove the port, and no table for a process holding no socket. Read asynchronously instead (five
 * thread-pool round trips per table, each waiting for a busy loop), a recovery burst's binds were
 * seen later, not sooner (P=5 proof, 2026-12-04).
 * Failure modes: none thrown; a process that is gone or unreadable gives false.
 */
export function listensOn(pid: number, port: number): boolean {
  const held = socketInodes(pid);
  if (held.size === 0) return false;
  return TABLES.some((table) => [...listeningInodes(table, port)].some((inode) => held.has(inode)));
}
