import type { ChildProcess } from "node:child_process";
import { createInterface } from "node:readline";
import { z } from "zod";

/** The line a runtime prints once its command transport listens (services/runtime/main.ts). */
export const ListeningLine = z.object({
  event: z.literal("listening"),
  port: z.number().int().min(1).max(65_535),
  hostIncarnation: z.string().min(1),
}).loose();
export type ListeningLine = z.infer<typeof ListeningLine>;

export interface ChildExit { readonly exitCode: number | null; readonly signal: string | null }

export type StartupOutcome =
  | { readonly kind: "listening"; readonly line: ListeningLine }
  | { readonly kind: "exited"; readonly exit: ChildExit }
  | { readonly kind: "timeout" }
  | { readonly kind: "aborted" };

/** A child's output as it is read: the last few KiB for failure reasons, and stdout lines for watchers. */
export interface FollowedOutput {
  tail(): string;
  /** Calls `listener` for every later stdout line until the returned function is called. */
  onStdoutLine(listener: (line: string) => void): () => void;
}

/**
 * Follows a child's stdout and stderr for its whole life: every line goes to `onLine`, the last few
 * KiB to `tail()`. Reading never stops, so a chatty runtime can never block on a full pipe.
 */
export function followOutput(child: ChildProcess, onLine: (stream: "stdout" | "stderr", line: string) => void): FollowedOutput {
  let tail = "";
  const watchers = new Set<(line: string) => void>();
  for (const [name, stream] of [["stdout", child.stdout], ["stderr", child.stderr]] as const) {
    if (!stream) continue;
    createInterface({ input: stream, crlfDelay: Infinity }).on("line", (line) => {
      tail = `${tail}${line}\n`.slice(-4000);
      onLine(name, line);
      if (name === "stdout") for (const w of watchers) w(line);
    });
  }
  return {
    tail: () => tail,
    onStdoutLine(listener) {
      watchers.add(listener);
      return () => { watchers.delete(listener); };
    },
  };
}

/**
 * Waits for the first `listening` line on stdout, or the child's exit, or `timeoutMs`, or `signal`,
 * whichever comes first. Lines that are not JSON or not the announcement are ignored (the runtime
 * may log to stdout). Never rejects.
 */
export function awaitListening(output: FollowedOutput, exited: Promise<ChildExit>, timeoutMs: number, signal?: AbortSignal): Promise<StartupOutcome> {
  return new Promise((resolve) => {
    const done = (o: StartupOutcome): void => {
      clearTimeout(timer);
      stop();
      signal?.removeEventListener("abort", onAbort);
      resolve(o);
    };
    const onLine = (line: string): void => {
      const parsed = ListeningLine.safeParse(safeJson(line));
      if (parsed.success) done({ kind: "listening", line: parsed.data });
    };
    const onAbort = (): void => done({ kind: "aborted" });
    const timer = setTimeout(() => done({ kind: "timeout" }), timeoutMs);
    const stop = output.onStdoutLine(onLine);
    signal?.addEventListener("abort", onAbort, { once: true });
    if (signal?.aborted) onAbort();
    void exited.then((exit) => done({ kind: "exited", exit }));
  });
}

function safeJson(line: string): unknown {
  try { return JSON.parse(line); } catch { return undefined; }
}
