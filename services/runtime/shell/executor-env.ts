import type { Clock } from "../../../platform/clock.ts";
import type { OutputStore } from "../../../platform/output-store.ts";
import type { ChildRunPort } from "./child-runs.ts";
import type { EgressPolicy } from "./egress-request.ts";
import type { SecretResolver } from "./secrets.ts";
import type { StepCacheEnv } from "./step-cache.ts";
import type { StepRunner } from "./step-runners.ts";
import type { WaitSignals } from "./wait-steps.ts";
import type { LoadedWorker } from "./worker-module.ts";
import type { WorkerPool } from "./worker-pool.ts";

/** What an execution runs with: the runtime's shared workers, step runners and stores (execution.ts). */
export interface ExecutorEnv {
  readonly workers: WorkerPool;
  readonly maxWorkersPerRun: number;
  readonly runStep: StepRunner;
  readonly llmBaseUrl?: string;
  /** The egress policy of a tenant's http and llm steps (absent: the default policy for every tenant). */
  readonly egressFor?: (tenantId: string) => EgressPolicy;
  readonly clock: Clock;
  readonly log: (fields: Record<string, unknown>) => void;
  /** Object store for outputs above the inline limit (absent: such an output fails its step). */
  readonly outputs?: OutputStore;
  readonly secrets?: SecretResolver;
  /** The tenant's worker (custom steps); absent on runtimes that run built-in kinds only. */
  readonly worker?: LoadedWorker;
  /** The largest map step expansion (default 10 000; not read from the environment yet). */
  readonly mapMaxItems?: number;
  /** The step cache across runs (docs/step-cache.md); absent: steps with `cache` always execute. */
  readonly stepCache?: StepCacheEnv;
  /** Where run steps submit and follow child runs (absent: a run step fails, step-kind-unavailable). */
  readonly childRuns?: ChildRunPort;
  /** Where wait steps read their run's signals, and how often (absent: a wait step fails). */
  readonly signals?: WaitSignals;
}
