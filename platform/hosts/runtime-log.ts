import { closeSync, mkdirSync, openSync } from "node:fs";
import { open } from "node:fs/promises";
import { join } from "node:path";

const POLL_MS = 25;

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
 * Follows a log file from its current end, polling every 25 ms (the file may be written by a
 * process that outlives us, so there is no end-of-stream to wait for). Every complete line goes to
 * `onLine` and to watchers. Read errors stop following silently: the caller's start-up timeout
 * and exit watch still decide the outcome.
 */
export async function followLog(path: string, onLine: (line: string) => void): Promise<FollowedOutput> {
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
  const loop = (async () => {
    while (!stopped) {
      await readMore().catch(() => {
        stopped = true;
      });
      if (!stopped) await new Promise((r) => setTimeout(r, POLL_MS));
    }
    // One last read: a runtime that just exited may have written its reason after our last poll.
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
      await loop;
    },
  };
}
