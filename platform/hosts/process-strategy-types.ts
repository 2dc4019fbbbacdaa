import type { ChildProcess } from "node:child_process";
import type { ChildExit } from "./startup-announcement.ts";
import type { HostEndpoint, HostFacts, HostSpec, HostStrategy, WarmPoolHost } from "./types.ts";

/** The process host strategy's options, its interface and its per-RuntimeInstanceId record (process-strategy.ts). */

/** The record key of a pool member: no tenant, sizing or transport (those come with the binding). */
export const poolSpec = (memberId: string): HostSpec => ({
  controlPlaneId: "warm-pool",
  runtimeInstanceId: memberId,
  isolationMode: "shared",
  transport: "http",
  sizing: { workers: 1, maxConcurrentRuns: 1, localQueueCapacity: 0, maxWorkersPerRun: 1 },
  commandToken: "",
  natsUrl: "",
});

export interface ProcessStrategyOptions {
  /**
   * argv of the runtime. Default: this Node with `--import tsx` running services/runtime/main.ts.
   * Not `node_modules/.bin/tsx`: that CLI runs the script in a second (child) process, so the pid we
   * spawn would not be the runtime's pid, its incarnation would not match the one the runtime
   * reports, and killing it would orphan the real runtime.
   */
  readonly command?: readonly string[];
  readonly cwd?: string;
  readonly bindHost?: string;
  /** How long a runtime may take to announce `listening` (default 30 s; cold tsx start-up on a busy machine is seconds). */
  readonly startupTimeoutMs?: number;
  /** Environment the runtime needs to run at all (default PATH and HOME); identity variables always win over it. */
  readonly baseEnv?: Readonly<Record<string, string>>;
  /** Receives the runtime's output lines while it starts up (the whole log stays in `logDir`). */
  readonly onOutput?: (runtimeInstanceId: string, line: string) => void;
  /** Where each runtime's stdout+stderr file goes (default `.run/runtimes` in the repository). */
  readonly logDir?: string;
}

export interface HostRecord {
  readonly identity: string;
  /** A warm pool member: the RuntimeInstanceId it was bound to (exits are reported under it from then on). */
  boundTo?: string;
  child?: ChildProcess;
  exited?: Promise<ChildExit>;
  exit?: ChildExit;
  running?: { readonly host: HostFacts; readonly endpoint: HostEndpoint };
}

/** The process host strategy plus what tests and `make run` need to stop every host it started. */
/** Its warm pool members (WarmPoolHost) are runtime processes on a loopback bind port. */
export interface ProcessHostStrategy extends HostStrategy, WarmPoolHost {
  /** SIGKILLs every runtime this strategy spawned that is still running and waits for each exit. */
  killAll(budgetMs?: number): Promise<void>;
  /** Pids of runtimes this strategy spawned that have not exited (for tests proving "exactly one"). */
  livePids(): number[];
  /** Runtimes this strategy started (every readiness layer it owns passed) whose process has not exited. */
  liveHosts(): { readonly runtimeInstanceId: string; readonly host: HostFacts }[];
  /** Members still booting are stopped (SIGSTOP of their groups) or continued (SIGCONT): booting-groups.ts. */
  holdBoots(hold: boolean): number;
}
