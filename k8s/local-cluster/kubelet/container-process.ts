import { spawn, type ChildProcess } from "node:child_process";
import { closeSync, openSync } from "node:fs";
import { isSameProcessAlive, processStartTime, signalGroup } from "../lib/proc.ts";
import { containerPaths, readExitCode, writeRecord, type ContainerRecord } from "./state-store.ts";

/** How a container process ended. `exitCode` follows the container convention: 128+n when killed by signal n. */
export interface ContainerExit {
  readonly exitCode: number;
  readonly signal?: string;
  readonly finishedAt: string;
  /** False when the process was adopted and died without its wrapper recording a code (killed group). */
  readonly codeKnown: boolean;
}

// The wrapper is a plain sh that runs the container command as its child in the same process
// group and writes the command's exit status to a file, so a restarted kubelet that is no longer
// the parent can still learn the exit code. `trap :` keeps the shell alive through the SIGTERM sent
// to the group while the command (whose traps are reset to default) receives it.
const WRAPPER = 'f=$1; shift; trap : TERM INT HUP; "$@"; c=$?; echo "$c" >"$f.tmp" && mv "$f.tmp" "$f"; exit "$c"';
const SIGNALS: Record<string, number> = {
  SIGHUP: 1,
  SIGINT: 2,
  SIGQUIT: 3,
  SIGKILL: 9,
  SIGSEGV: 11,
  SIGPIPE: 13,
  SIGTERM: 15,
};

/** A container process this kubelet started, or adopted after a restart. */
export interface ContainerProcess {
  readonly record: ContainerRecord;
  /** Resolves once, when the process (group leader) is gone. */
  readonly exited: Promise<ContainerExit>;
  /** Signals the whole process group (the command and anything it forked). */
  signal(sig: NodeJS.Signals): void;
}

/**
 * Starts `argv` as a container: a new session/process group (so it survives a kubelet restart and
 * can be signalled as a unit), cwd and env as given, stdout+stderr appended to the container's log
 * file. The record is written to the state dir before this resolves. Throws when spawn fails.
 */
export async function spawnContainer(
  stateDir: string,
  meta: { podUid: string; namespace: string; podName: string; container: string; podIP: string; restartCount: number },
  argv: readonly string[],
  env: Record<string, string>,
  cwd: string,
): Promise<ContainerProcess> {
  const paths = await containerPaths(stateDir, meta.podUid, meta.container);
  const fd = openSync(paths.logFile, "a");
  let child: ChildProcess;
  try {
    child = spawn("/bin/sh", ["-c", WRAPPER, "sh", paths.exitFile, ...argv], {
      detached: true,
      stdio: ["ignore", fd, fd],
      env,
      cwd,
    });
    const c = child;
    await new Promise<void>((ok, fail) => {
      c.once("spawn", ok);
      c.once("error", fail);
    });
  } finally {
    closeSync(fd);
  }
  const pid = child.pid ?? -1;
  const record: ContainerRecord = {
    ...meta,
    pid,
    startTime: processStartTime(pid) ?? "",
    startedAt: new Date().toISOString(),
    exitFile: paths.exitFile,
    logFile: paths.logFile,
  };
  let gone = false;
  const exited = new Promise<ContainerExit>((ok) => {
    child.once("exit", (code, sig) => {
      gone = true;
      void readExitCode(paths.exitFile).then((written) => {
        const exitCode = written ?? code ?? 128 + (SIGNALS[sig ?? ""] ?? 9);
        ok({ exitCode, ...(sig ? { signal: sig } : {}), finishedAt: new Date().toISOString(), codeKnown: true });
      });
    });
  });
  await writeRecord(stateDir, record);
  // Once reaped, the pid may be reused: never signal it again.
  return {
    record,
    exited,
    signal: (s) => {
      if (!gone) signalGroup(pid, s);
    },
  };
}

const adopted = new Map<ContainerRecord, (e: ContainerExit) => void>();
let poller: NodeJS.Timeout | undefined;

// An adopted process is not our child, so no exit event arrives: poll its (pid, start time) pair.
// 100 ms keeps "the Pod shows the exit within a second" true with room to spare.
function poll(): void {
  for (const [rec, done] of adopted) {
    if (isSameProcessAlive(rec.pid, rec.startTime)) continue;
    adopted.delete(rec);
    void readExitCode(rec.exitFile).then((code) =>
      done({ exitCode: code ?? 137, finishedAt: new Date().toISOString(), codeKnown: code !== undefined }),
    );
  }
  if (adopted.size === 0 && poller) {
    clearInterval(poller);
    poller = undefined;
  }
}

/**
 * Adopts a container recorded by an earlier kubelet run. Returns undefined when the recorded
 * process is no longer alive (the caller then reads its exit file), never a process whose pid
 * was reused by something else.
 */
export function adoptContainer(record: ContainerRecord): ContainerProcess | undefined {
  if (!isSameProcessAlive(record.pid, record.startTime)) return undefined;
  const exited = new Promise<ContainerExit>((ok) => adopted.set(record, ok));
  poller ??= setInterval(poll, 100);
  return {
    record,
    exited,
    signal: (s) => {
      if (isSameProcessAlive(record.pid, record.startTime)) signalGroup(record.pid, s);
    },
  };
}

/** Stops polling adopted processes (kubelet shutdown; the processes keep running). */
export function stopAdoptionPolling(): void {
  if (poller) clearInterval(poller);
  poller = undefined;
  adopted.clear();
}
