import { z } from "zod";
import type { FollowedOutput } from "./runtime-log.ts";

/** The line a runtime prints once its command transport listens (services/runtime/main.ts). */
export const ListeningLine = z
  .object({
    event: z.enum(["listening", "pool-listening"]),
    port: z.number().int().min(1).max(65_535),
    hostIncarnation: z.string().min(1),
  })
  .loose();
export type ListeningLine = z.infer<typeof ListeningLine>;

export interface ChildExit {
  readonly exitCode: number | null;
  readonly signal: string | null;
}

export type StartupOutcome =
  | { readonly kind: "listening"; readonly line: ListeningLine }
  | { readonly kind: "exited"; readonly exit: ChildExit }
  | { readonly kind: "timeout" }
  | { readonly kind: "aborted" };

/**
 * Waits for the first `listening` line in the runtime's log, or the child's exit, or `timeoutMs`, or `signal`,
 * whichever comes first. Lines that are not JSON or not the announcement are ignored (the runtime
 * may log to stdout). Never rejects.
 */
export function awaitListening(
  output: FollowedOutput,
  exited: Promise<ChildExit>,
  timeoutMs: number,
  signal?: AbortSignal,
  /** `pool-listening` for a warm pool member (services/runtime/shell/pool-bind.ts). */
  event: ListeningLine["event"] = "listening",
): Promise<StartupOutcome> {
  return new Promise((resolve) => {
    const done = (o: StartupOutcome): void => {
      clearTimeout(timer);
      stop();
      signal?.removeEventListener("abort", onAbort);
      resolve(o);
    };
    const onLine = (line: string): void => {
      const parsed = ListeningLine.safeParse(safeJson(line));
      if (parsed.success && parsed.data.event === event) done({ kind: "listening", line: parsed.data });
    };
    const onAbort = (): void => done({ kind: "aborted" });
    const timer = setTimeout(() => done({ kind: "timeout" }), timeoutMs);
    const stop = output.onLine(onLine);
    signal?.addEventListener("abort", onAbort, { once: true });
    if (signal?.aborted) onAbort();
    void exited.then((exit) => done({ kind: "exited", exit }));
  });
}

function safeJson(line: string): unknown {
  try {
    return JSON.parse(line);
  } catch {
    return undefined;
  }
}
