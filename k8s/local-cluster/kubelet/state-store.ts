import { mkdir, readdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { isSameProcessAlive, signalGroup } from "../lib/proc.ts";

/**
 * What the kubelet writes down for every container process it starts, before it can die with it:
 * the pid and its start time (together they prove the process is still the one we started), the
 * Pod UID it belongs to, and where its exit code and output go. Kept under
 * `<stateDir>/pods/<podUid>/<container>.json`.
 */
export interface ContainerRecord {
  readonly podUid: string;
  readonly namespace: string;
  readonly podName: string;
  readonly container: string;
  readonly pid: number;
  readonly startTime: string;
  readonly startedAt: string;
  readonly restartCount: number;
  readonly podIP: string;
  readonly exitFile: string;
  readonly logFile: string;
}

/** The directory holding every record, exit file and log of one Pod (by UID). */
export const podDir = (stateDir: string, podUid: string): string => join(stateDir, "pods", podUid);

/** Paths for a container's files (record, exit code, output). Creates the pod directory. */
export async function containerPaths(
  stateDir: string,
  podUid: string,
  container: string,
): Promise<{ record: string; exitFile: string; logFile: string }> {
  const dir = podDir(stateDir, podUid);
  await mkdir(dir, { recursive: true });
  return {
    record: join(dir, `${container}.json`),
    exitFile: join(dir, `${container}.exit`),
    logFile: join(dir, `${container}.log`),
  };
}

/** Writes a record atomically (temp file + rename), so a crash never leaves half a record. */
export async function writeRecord(stateDir: string, rec: ContainerRecord): Promise<void> {
  const { record } = await containerPaths(stateDir, rec.podUid, rec.container);
  await writeFile(`${record}.tmp`, JSON.stringify(rec));
  await rename(`${record}.tmp`, record);
}

/** Every readable record under `stateDir` (unreadable or foreign files are skipped). */
export async function readAllRecords(stateDir: string): Promise<ContainerRecord[]> {
  const out: ContainerRecord[] = [];
  const root = join(stateDir, "pods");
  for (const uid of await readdir(root).catch(() => [] as string[])) {
    for (const f of await readdir(join(root, uid)).catch(() => [] as string[])) {
      if (!f.endsWith(".json")) continue;
      try {
        const rec = JSON.parse(await readFile(join(root, uid, f), "utf8")) as ContainerRecord;
        if (rec.podUid === uid && Number.isInteger(rec.pid) && typeof rec.startTime === "string") out.push(rec);
      } catch {
        /* a file we did not write completely: ignore */
      }
    }
  }
  return out;
}

/** The exit code the container wrapper wrote, or undefined when it could not write one (killed). */
export async function readExitCode(exitFile: string): Promise<number | undefined> {
  try {
    const n = Number.parseInt((await readFile(exitFile, "utf8")).trim(), 10);
    return Number.isInteger(n) ? n : undefined;
  } catch {
    return undefined;
  }
}

/** Removes everything recorded for a Pod (after it is finalized or found to be gone). */
export async function removePod(stateDir: string, podUid: string): Promise<void> {
  await rm(podDir(stateDir, podUid), { recursive: true, force: true });
}

/**
 * Stops every recorded container process that is provably ours (same pid and start time):
 * SIGTERM to its process group, SIGKILL after `graceMs`, then removes the records. Used when a
 * whole local cluster is torn down, and by a restarted kubelet for Pods that no longer exist.
 */
export async function reapRecords(
  stateDir: string,
  records: readonly ContainerRecord[],
  graceMs: number,
): Promise<void> {
  const live = records.filter((r) => isSameProcessAlive(r.pid, r.startTime));
  for (const r of live) signalGroup(r.pid, "SIGTERM");
  const deadline = Date.now() + graceMs;
  while (live.some((r) => isSameProcessAlive(r.pid, r.startTime)) && Date.now() < deadline)
    await new Promise((ok) => setTimeout(ok, 50));
  for (const r of live) if (isSameProcessAlive(r.pid, r.startTime)) signalGroup(r.pid, "SIGKILL");
  while (live.some((r) => isSameProcessAlive(r.pid, r.startTime))) await new Promise((ok) => setTimeout(ok, 20));
  for (const uid of new Set(records.map((r) => r.podUid))) await removePod(stateDir, uid);
}
