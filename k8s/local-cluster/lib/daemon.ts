import { spawn } from "node:child_process";
import { closeSync, openSync, readFileSync } from "node:fs";
import { readFile, rm, writeFile } from "node:fs/promises";
import { isSameProcessAlive, processStartTime, signalGroup } from "./proc.ts";

/** What is recorded about a daemon so that a later, different process can stop exactly it. */
export interface DaemonRecord {
  readonly name: string;
  readonly pid: number;
  readonly startTime: string;
  readonly logFile: string;
}

/**
 * The nice value of the cluster's own components (etcd, kube-apiserver, kube-scheduler,
 * kube-controller-manager, kubelet): DROVER_K8S_NICE (−20–19), else 0, the machine's default. A
 * measurement setting, off by default: a real cluster reserves CPU for them (control plane nodes,
 * the kubelet's kube-reserved), and on drover's one shared 2-core node at −10 a SIGKILLed runtime's
 * exit reached its Pod status sooner, but the fence and the bind, in drover's services at the
 * default priority, did not get faster with it (docs/decisions.md). containerd is never reniced: its
 * shims and the containers they start inherit its priority, and the workload must not.
 */
export function componentNice(): number {
  const v = Number(process.env.DROVER_K8S_NICE ?? 0);
  return Number.isInteger(v) && v >= -20 && v <= 19 ? v : 0;
}

/**
 * Starts `cmd args` as a detached daemon (its own session and process group, so it outlives the
 * caller — `make k8s-up` — and can be stopped as a group), with stdout and stderr appended to
 * `logFile`, and writes its {@link DaemonRecord} to `recordFile`. `nice`: started through
 * `nice -n <nice>` (which execs `cmd`: same pid), so every thread it ever creates inherits the
 * priority. Throws when spawning fails.
 */
export async function startDaemon(
  name: string,
  cmd: string,
  args: readonly string[],
  opts: {
    logFile: string;
    recordFile: string;
    env?: NodeJS.ProcessEnv;
    cwd?: string;
    nice?: number;
  },
): Promise<DaemonRecord> {
  const fd = openSync(opts.logFile, "a");
  const [file, argv] = opts.nice ? ["nice", ["-n", String(opts.nice), cmd, ...args]] : [cmd, args];
  try {
    const child = spawn(file, argv, {
      detached: true,
      stdio: ["ignore", fd, fd],
      env: opts.env ?? process.env,
      cwd: opts.cwd,
    });
    const pid = await new Promise<number>((ok, fail) => {
      child.once("error", fail);
      child.once("spawn", () => (child.pid === undefined ? fail(new Error(`${name}: no pid`)) : ok(child.pid)));
    });
    child.unref();
    const startTime = processStartTime(pid) ?? "";
    const rec: DaemonRecord = { name, pid, startTime, logFile: opts.logFile };
    await writeFile(opts.recordFile, JSON.stringify(rec));
    return rec;
  } finally {
    closeSync(fd);
  }
}

/** True while the recorded daemon (same pid and start time) is alive. */
export function daemonAlive(rec: DaemonRecord): boolean {
  return isSameProcessAlive(rec.pid, rec.startTime);
}

/** Reads a record written by {@link startDaemon}; undefined when there is none. */
export async function readDaemonRecord(recordFile: string): Promise<DaemonRecord | undefined> {
  try {
    return JSON.parse(await readFile(recordFile, "utf8")) as DaemonRecord;
  } catch {
    return undefined;
  }
}

/**
 * Stops the recorded daemon: SIGTERM to its process group, SIGKILL after `graceMs`; resolves when it
 * is gone. Does nothing when the pid is dead or now belongs to another process (start time differs),
 * so it never kills a stranger. Removes the record file.
 */
export async function stopDaemon(recordFile: string, graceMs = 10_000): Promise<void> {
  const rec = await readDaemonRecord(recordFile);
  if (rec && daemonAlive(rec)) {
    signalGroup(rec.pid, "SIGTERM");
    const deadline = Date.now() + graceMs;
    while (daemonAlive(rec) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    if (daemonAlive(rec)) {
      signalGroup(rec.pid, "SIGKILL");
      while (daemonAlive(rec)) await new Promise((r) => setTimeout(r, 20));
    }
  }
  await rm(recordFile, { force: true });
}

/**
 * Polls `probe` every 100 ms until it returns true; throws with the daemon's log tail when the
 * daemon dies first or the deadline passes.
 */
export async function waitUntilReady(
  rec: DaemonRecord,
  probe: () => Promise<boolean>,
  timeoutMs: number,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await probe().catch(() => false)) return;
    if (!daemonAlive(rec))
      throw new Error(`${rec.name} exited during start-up; log ${rec.logFile}:\n${tail(rec.logFile)}`);
    if (Date.now() > deadline)
      throw new Error(`${rec.name} not ready within ${timeoutMs} ms; log ${rec.logFile}:\n${tail(rec.logFile)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

function tail(file: string): string {
  try {
    return readFileSync(file, "utf8").split("\n").slice(-25).join("\n");
  } catch {
    return "(no log)";
  }
}
