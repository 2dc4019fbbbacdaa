import { closeSync, openSync, readFileSync, statSync, unlinkSync, writeSync } from "node:fs";
import { mkdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/**
 * A local cluster's slice of the loopback network: a /22 of 127.0.0.0/16 (slot n → 127.0.4n.0/22),
 * so that a developer's `make k8s-up` cluster and a test run's cluster on the same machine never
 * hand out the same Pod IP. Node k (0–2) gets 127.0.(4n+k).0/24 as its pod CIDR; the gateway gets
 * addresses from 127.0.(4n+3).0/24. Slot 0 (holding 127.0.0.1) is never used.
 */
export interface NetworkSlot {
  readonly slot: number;
  readonly lockFile: string;
  /** Pod CIDR for node index 0, 1 or 2. */
  podCidr(node: 0 | 1 | 2): string;
  /** The gateway's addresses live here (the gateway uses .1 upwards). */
  readonly gatewayCidr: string;
}

const LOCK_DIR = join(tmpdir(), "drover-local-cluster-net");
const STALE_MS = 120_000;

function slotInfo(slot: number, lockFile: string): NetworkSlot {
  const third = slot * 4;
  return { slot, lockFile, podCidr: (k) => `127.0.${third + k}.0/24`, gatewayCidr: `127.0.${third + 3}.0/24` };
}

// A lock names the run dir whose etcd owns it; it is stale when that etcd is no longer alive (or
// never started and the lock is older than two minutes).
function isStale(lockFile: string): boolean {
  try {
    const runDir = readFileSync(lockFile, "utf8").trim();
    const rec = JSON.parse(readFileSync(join(runDir, "etcd.json"), "utf8")) as { pid: number; startTime: string };
    const stat = readFileSync(`/proc/${rec.pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return fields[19] !== rec.startTime || fields[0] === "Z";
  } catch {
    try {
      return Date.now() - statSync(lockFile).mtimeMs > STALE_MS;
    } catch {
      return true;
    }
  }
}

/**
 * Claims the lowest free slot (1–63) for the cluster in `runDir` with an exclusive lock file in the
 * temp dir, taking over stale locks. Throws when all 63 are held by live clusters.
 */
export function claimNetworkSlot(runDir: string): NetworkSlot {
  mkdirSync(LOCK_DIR, { recursive: true });
  for (let slot = 1; slot < 64; slot++) {
    const lockFile = join(LOCK_DIR, `slot-${slot}`);
    for (let attempt = 0; attempt < 2; attempt++) {
      try {
        const fd = openSync(lockFile, "wx");
        writeSync(fd, runDir);
        closeSync(fd);
        return slotInfo(slot, lockFile);
      } catch {
        if (attempt === 0 && isStale(lockFile)) {
          try {
            unlinkSync(lockFile);
          } catch {
            /* raced: retry once */
          }
        } else break;
      }
    }
  }
  throw new Error(`no free loopback network slot for a local cluster (63 in use, see ${LOCK_DIR})`);
}

/** Rebuilds the slot description from its number (for a process that did not claim it). */
export function networkSlot(slot: number): NetworkSlot {
  return slotInfo(slot, join(LOCK_DIR, `slot-${slot}`));
}

/** Releases the slot if `runDir` still holds it. */
export function releaseNetworkSlot(slot: NetworkSlot, runDir: string): void {
  try {
    if (readFileSync(slot.lockFile, "utf8").trim() === runDir) unlinkSync(slot.lockFile);
  } catch {
    /* already gone */
  }
}
