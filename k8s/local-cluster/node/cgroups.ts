import { existsSync, readdirSync, readFileSync, rmdirSync, statSync, writeFileSync, mkdirSync } from "node:fs";
import { join } from "node:path";

const CGROUP_FS = "/sys/fs/cgroup";

/** Every mounted cgroup hierarchy directory (v1 controllers, name=systemd, and unified when hybrid). */
function hierarchies(): string[] {
  return readdirSync(CGROUP_FS)
    .map((d) => join(CGROUP_FS, d))
    .filter((d) => statSync(d).isDirectory() && existsSync(join(d, "cgroup.procs")));
}

/**
 * CPU weight of a node's whole cgroup root against the machine's other processes (each 1024). All
 * of a node's Pods share this one weight: at the default 1024 they would together get the CPU of a
 * single host process, and on a busy shared machine runtime containers starve (dispatches time out)
 * while the same runtimes as host processes do not. 8192 = as much as eight busy host processes.
 */
export const NODE_CPU_SHARES = 8192;

/**
 * Creates the node's own cgroup root (e.g. `/drover-3-0`) in every hierarchy, so two kubelets on one
 * machine never share `kubepods`; cpuset's cpus and mems are copied from the parent (a new cpuset
 * cgroup starts empty and would refuse every task); cpu.shares is {@link NODE_CPU_SHARES}.
 */
export function createCgroupRoot(name: string): void {
  for (const h of hierarchies()) {
    const dir = join(h, name);
    mkdirSync(dir, { recursive: true });
    for (const f of ["cpuset.cpus", "cpuset.mems"]) {
      if (existsSync(join(h, f))) writeFileSync(join(dir, f), readFileSync(join(h, f), "utf8").trim() || "\n");
    }
    if (existsSync(join(dir, "cpu.shares"))) writeFileSync(join(dir, "cpu.shares"), String(NODE_CPU_SHARES));
  }
}

/** Processes still in the node's cgroups (any hierarchy): none may remain after teardown. */
export function cgroupProcesses(name: string): number[] {
  const pids = new Set<number>();
  const walk = (dir: string): void => {
    if (!existsSync(dir)) return;
    for (const p of readFileSync(join(dir, "cgroup.procs"), "utf8").split("\n").filter(Boolean)) pids.add(Number(p));
    for (const e of readdirSync(dir, { withFileTypes: true })) if (e.isDirectory()) walk(join(dir, e.name));
  };
  for (const h of hierarchies()) walk(join(h, name));
  return [...pids];
}

/** Removes the node's cgroup trees, deepest first; throws when one is still busy. */
export function removeCgroupRoot(name: string): void {
  const rm = (dir: string): void => {
    for (const e of readdirSync(dir, { withFileTypes: true })) if (e.isDirectory()) rm(join(dir, e.name));
    rmdirSync(dir);
  };
  for (const h of hierarchies()) if (existsSync(join(h, name))) rm(join(h, name));
}

/** True when any hierarchy still holds the node's cgroup root. */
export function cgroupRootExists(name: string): boolean {
  return hierarchies().some((h) => existsSync(join(h, name)));
}
