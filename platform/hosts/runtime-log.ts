import { closeSync, mkdirSync, openSync, watch, type FSWatcher } from "node:fs";
import { open } from "node:fs/promises";
import { join } from "node:path";

/** Between reads when the file cannot be watched (no inotify): as before change notifications. */
const POLL_MS = 25;
/** Between reads of a watched file: only in case a change notification is lost. */
const WATCHED_POLL_MS = 250;

/**
 * A runtime's output goes to a file, not a pipe: a runtime must survive its provisioner being
 * SIGKILLed (the next provisioner adopts or retires it), and a runtime writing to a pipe whose
 * reader died gets EPIPE on its next log line and crashes at an unpredictable later moment.
 * `<dir>/<runtimeInstanceId>.log` holds stdout and stderr interleaved by line.
 */
export function openRuntimeLog(
  dir: string,
  runtimeInstanceId: string,
): { path: string; fd: number; closeParentCopy(): void } {
  mkdirSync(dir, { recursive: true });
  const path = join(dir, `${runtimeInstanceId}.log`);
  const fd = openSync(path, "a");
  return { path, fd, closeParentCopy: () => closeSync(fd) };
}

/** A runtime's log as it is read: the last few KiB for failure reasons, and lines for watchers. */
export interface FollowedOutput {
  tail(): string;
  /** Calls `listener` for every later line until the returned function is called. */
  onLine(listener: (line: string) => void): () => void;
  /** Stops reading the file (it stays on disk for operators). */
  stop(): Promise<void>;
}

/**
 * Follows a log file from its current end (the file may be written by a process that outlives us,
 * so there is no end-of-stream to wait for). Every complete line goes to `onLine` and to watchers.
 * It reads when the file changes (fs.watch: inotify on Linux) and every `watchedPollMs` in case a
 * notification is lost; every 25 ms where the file cannot be watched. Polling every 25 ms cost the
 * provisioner a read per booting runtime 40 times a second: its largest CPU item while a warm pool
 * refill booted beside a recovery burst's binds (P=5 proof profile). Read errors stop following
 * silently: the caller's start-up timeout and exit watch still decide the outcome.
 */
export async function followLog(
  path: string,
  onLine: (line: string) => void,
  watchedPollMs = WATCHED_POLL_MS,
): Promise<FollowedOutput> {
  const fh = await open(path, "r");
  let offset = (await fh.stat()).size;
  let tail = "";
  let partial = "";
  let stopped = false;
  const watchers = new Set<(line: string) => void>();
  const buf = Buffer.alloc(64 * 1024);
  const readMore = async (): Promise<void> => {
    for (;;) {
      const { bytesRead } = await fh.read(buf, 0, buf.length, offset);
      if (bytesRead === 0) return;
      offset += bytesRead;
      const lines = (partial + buf.subarray(0, bytesRead).toString("utf8")).split("\n");
      partial = lines.pop() ?? "";
      for (const line of lines) {
        tail = `${tail}${line}\n`.slice(-4000);
        onLine(line);
        for (const w of watchers) w(line);
      }
    }
  };
  // A change (or stop) ends the pause between reads; a change during a read makes the next pause zero.
  let changed = false;
  let wake: (() => void) | undefined;
  const kick = (): void => {
    changed = true;
    wake?.();
  };
  let watcher: FSWatcher | undefined;
  try {
    watcher = watch(path, { persistent: false }, kick);
    watcher.on("error", () => {
      watcher?.close();
      watcher = undefined;
      kick();
    });
  } catch {
    watcher = undefined; // not watchable here: poll
  }
  const pause = (): Promise<void> =>
    new Promise((resolve) => {
      if (changed) return resolve();
      const timer = setTimeout(resolve, watcher ? watchedPollMs : POLL_MS);
      wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  const loop = (async () => {
    while (!stopped) {
      changed = false;
      await readMore().catch(() => {
        stopped = true;
      });
      if (!stopped) await pause();
      wake = undefined;
    }
    watcher?.close();
    // One last read: a runtime that just exited may have written its reason after our last read.
    await readMore().catch(() => undefined);
    await fh.close().catch(() => undefined);
  })();
  return {
    tail: () => tail + partial,
    onLine(listener) {
      watchers.add(listener);
      return () => {
        watchers.delete(listener);
      };
    },
    async stop() {
      stopped = true;
      kick();
      await loop;
    },
  };
}
