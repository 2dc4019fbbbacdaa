import { readFile, readdir } from "node:fs/promises";

/**
 * CPU time (user + system, ms) of every process descended from this one, grouped by what it is
 * (`api`, `admission`, …, `runtime`, `nats-server`, `redis-server`, `ferretdb`): where the CPU of
 * an end-to-end benchmark goes. Figures of two snapshots subtract; they do not depend on the
 * machine's load the way a throughput does. Linux /proc only.
 */
export type CpuSnapshot = ReadonlyMap<number, { readonly name: string; readonly ms: number }>;

const TICK_MS = 10; // USER_HZ is 100 on Linux

export async function cpuSnapshot(root = process.pid): Promise<CpuSnapshot> {
  const procs = new Map<number, { ppid: number; ms: number; cmd: string }>();
  for (const d of await readdir("/proc")) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = await readFile(`/proc/${d}/stat`, "utf8");
      const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      const cmd = (await readFile(`/proc/${d}/cmdline`, "utf8")).split("\0").join(" ");
      procs.set(Number(d), { ppid: Number(f[1]), ms: (Number(f[11]) + Number(f[12])) * TICK_MS, cmd });
    } catch {
      /* exited while we read */
    }
  }
  const out = new Map<number, { name: string; ms: number }>();
  const isDescendant = (pid: number): boolean => {
    for (let p = procs.get(pid)?.ppid; p !== undefined && p > 0; p = procs.get(p)?.ppid) if (p === root) return true;
    return false;
  };
  for (const [pid, p] of procs) if (isDescendant(pid)) out.set(pid, { name: nameOf(p.cmd), ms: p.ms });
  return out;
}

/** What a process is, from its command line (`/proc/<pid>/cmdline`, arguments joined by spaces). */
export function nameOf(cmd: string): string {
  // A service runs from its bundle (platform/service-bundle.ts: service-<name>-<digest>.mjs) or from source.
  const service =
    /\/service-([\w-]+)-[0-9a-f]{16}\.mjs/.exec(cmd)?.[1] ?? /services\/([\w-]+)\/main\.ts/.exec(cmd)?.[1];
  if (service) return service;
  // A process host's runtime starts from its CommonJS bundle through runtime-loader.cjs
  // (platform/hosts/runtime-bundle.ts: `node runtime-loader.cjs .run/build/runtime-<digest>.cjs`).
  if (/\/runtime-loader\.cjs |\/runtime[^ ]*\.[cm]js(?: |$)/.test(cmd)) return "runtime";
  const exe = cmd.split(" ")[0]!.split("/").pop()!;
  return exe === "node" ? "node-other" : exe;
}

/** CPU ms spent per process kind between two snapshots (a process that exited meanwhile counts as far as seen). */
export function cpuSpent(before: CpuSnapshot, after: CpuSnapshot): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [pid, a] of after) out[a.name] = (out[a.name] ?? 0) + a.ms - (before.get(pid)?.ms ?? 0);
  return Object.fromEntries(Object.entries(out).sort((x, y) => y[1] - x[1]));
}
