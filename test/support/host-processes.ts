import { readdirSync, readFileSync } from "node:fs";
import { harnessCredentialOf } from "../../platform/nats-auth/server-keys.ts";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { HostSpec } from "../../platform/hosts/types.ts";
import { uniqueName } from "./isolation.ts";

/** Where host tests' runtimes write their logs (outside the repository). */
export const RUNTIME_LOGS = join(tmpdir(), "drover-host-test-runtimes");

/**
 * Pids of live (non-zombie) processes whose environment has `name=value`, found by scanning /proc
 * independently of any strategy's own bookkeeping: how host tests prove "exactly one process" and
 * "nothing left running".
 */
export function processesWithEnv(name: string, value: string): number[] {
  const needle = `${name}=${value}`;
  const out: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      if (stat.slice(stat.lastIndexOf(")") + 2).startsWith("Z")) continue;
      if (readFileSync(`/proc/${entry}/environ`, "utf8").split("\0").includes(needle)) out.push(Number(entry));
    } catch {
      // Exited while we looked, or not ours to read.
    }
  }
  return out;
}

/**
 * Process groups (by leader pid) of live processes whose environment has `name=value`. A runtime
 * started with tsx has a helper child (esbuild's service) in its group, so "exactly one runtime"
 * is one group, not one process.
 */
export function processGroupsWithEnv(name: string, value: string): number[] {
  return [
    ...new Set(
      processesWithEnv(name, value).flatMap((pid) => {
        try {
          return [processGroupOf(pid)];
        } catch {
          return [];
        }
      }),
    ),
  ].sort((a, b) => a - b);
}

/** Process group id of `pid` (field 5 of /proc/<pid>/stat). */
export function processGroupOf(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[2]);
}

/** A valid host spec with a fresh RuntimeInstanceId (nothing in it is contacted by the fake runtime). */
export function hostSpec(patch: Partial<HostSpec> = {}): HostSpec {
  return {
    controlPlaneId: "cp-host-test",
    runtimeInstanceId: uniqueName("rt-host"),
    tenantId: "tenant-a",
    isolationMode: "dedicated",
    transport: "http",
    sizing: { workers: 1, maxConcurrentRuns: 1, localQueueCapacity: 2, maxWorkersPerRun: 1 },
    commandToken: "token-0123456789abcdef",
    natsUrl: "nats://127.0.0.1:4222",
    ...patch,
    ...(patch.natsUrl && !patch.natsCreds ? { natsCreds: harnessCredentialOf(patch.natsUrl) } : {}),
  };
}
