import { readdirSync, readFileSync } from "node:fs";

/**
 * The host pid of the runtime process running in Pod `pod:<uid>` of the local cluster (the real
 * node's container main process, visible in the host's /proc): the process whose environment has
 * DROVER_POD_UID=<uid> and whose command line runs the image's bundled runtime.cjs (or
 * services/runtime/main.ts; not a shell, not tsx's esbuild helper). Undefined when the incarnation
 * is not a Pod's or no such process is alive.
 */
export function podRuntimePid(hostIncarnation: string): number | undefined {
  const m = /^pod:(.+)$/.exec(hostIncarnation);
  if (!m) return undefined;
  const needle = `DROVER_POD_UID=${m[1]}`;
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const argv = readFileSync(`/proc/${entry}/cmdline`, "utf8").split("\0");
      if (
        argv[0]?.endsWith("sh") ||
        !argv.some((a) => a.endsWith("services/runtime/main.ts") || a === "/app/runtime.cjs")
      )
        continue;
      if (readFileSync(`/proc/${entry}/environ`, "utf8").split("\0").includes(needle)) return Number(entry);
    } catch {
      // Exited while we looked, or not ours to read.
    }
  }
  return undefined;
}

/** Whether `pid` is still the runtime process of Pod `pod:<uid>` (one environ read: checked right before a signal). */
export function isPodRuntime(pid: number, hostIncarnation: string): boolean {
  try {
    return readFileSync(`/proc/${pid}/environ`, "utf8")
      .split("\0")
      .includes(`DROVER_POD_UID=${hostIncarnation.slice(4)}`);
  } catch {
    return false;
  }
}
