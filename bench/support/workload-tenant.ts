/** The W1–W3 benches' tenant: one dedicated tenant whose runtimes take 50 runs at once (issue #15 item 5). */
export const WORKLOAD_TENANT = {
  tenantId: "t-w",
  isolationMode: "dedicated",
  maxRuntimeInstances: 2,
  workersPerInstance: 50,
  maxConcurrentRunsPerInstance: 50,
  localQueueCapacity: 400,
  maxWorkersPerRun: 1,
  maxConcurrentRuns: 10_000,
} as const;
