import { closeSync, openSync, readdirSync, readlinkSync, readSync } from "node:fs";

/** The kernel's TCP tables, IPv4 first: a runtime bound to 127.0.0.1 is found without reading the IPv6 one. */
const TABLES = ["/proc/net/tcp", "/proc/net/tcp6"] as const;
/** Bytes asked of the kernel per read: it writes a table lazily, only as far as each read asks. */
const CHUNK = 1024;

/**
 * Whether a socket listening on TCP `port` (any local address) in one table of this network
 * namespace is one of `held`. The kernel lists the listening sockets first, then walks its whole
 * established-connection hash (the ~5–15 ms a full read costs on this machine, however few
 * sockets it holds): `listenersOnly` stops reading at the first line that is not a listener.
 */
function listedIn(table: string, port: number, held: ReadonlySet<string>, listenersOnly: boolean): boolean {
  const hex = `:${port.toString(16).toUpperCase().padStart(4, "0")}`;
  let fd: number;
  try {
    fd = openSync(table, "r");
  } catch {
    return false; // no IPv6 in this kernel or namespace
  }
  try {
    const buf = Buffer.alloc(CHUNK);
    let rest = "";
    let header = true;
    for (let n = readSync(fd, buf, 0, CHUNK, null); n > 0; n = readSync(fd, buf, 0, CHUNK, null)) {
      const lines = (rest + buf.toString("latin1", 0, n)).split("\n");
      rest = lines.pop()!;
      for (const line of lines) {
        if (header) {
          header = false;
          continue;
        }
        // sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode …; st 0A is LISTEN
        const f = line.trim().split(/\s+/);
        if (f.length <= 9) continue;
        if (f[3] !== "0A") {
          if (listenersOnly) return false;
        } else if (f[1]!.endsWith(hex) && held.has(f[9]!)) return true;
      }
    }
    return false;
  } finally {
    closeSync(fd);
  }
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
 * Reading a whole table costs the kernel a walk of its connection hash (~5–15 ms on this 2-core
 * machine, in the caller's event loop: a recovery burst's binds and pool refills spent most of the
 * provisioner's loop here, P=5 proof profile 2026-12-05), so the listeners the kernel lists first are
 * read alone (~0.2 ms), and a whole table only when they do not prove the port (a socket that
 * appeared or moved while being read is then found as before). The IPv6 table is read only when the
 * IPv4 one does not prove the port, and no table for a process holding no socket. Read
 * asynchronously instead (thread-pool round trips, each waiting for a busy loop), a recovery burst's
 * binds were seen later, not sooner (P=5 proof, 2026-12-04).
 * Failure modes: none thrown; a process that is gone or unreadable gives false.
 */
export function listensOn(pid: number, port: number): boolean {
  const held = socketInodes(pid);
  if (held.size === 0) return false;
  return (
    TABLES.some((table) => listedIn(table, port, held, true)) ||
    TABLES.some((table) => listedIn(table, port, held, false))
  );
}
