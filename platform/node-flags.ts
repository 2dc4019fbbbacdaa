// The node/V8 flags each control-plane service and runtime process starts with, before its script:
// in `startControlPlane` (the benches, the e2e, proof and k8s tiers) and for the provisioner's process
// runtimes; `make run` (scripts/run.sh) reads the same variables in bash, with the same default (none).
// Measurements: docs/decisions.md ("node/V8 flags").

/** The default, for every process kind. */
export const DEFAULT_NODE_FLAGS: readonly string[] = [];

/**
 * `DROVER_NODE_FLAGS` (space-separated; empty for none) replaces the default for every process;
 * `DROVER_NODE_FLAGS_<NAME>` (e.g. `DROVER_NODE_FLAGS_RUNTIME`, `DROVER_NODE_FLAGS_API`) for one kind.
 * For measurements: what was tried is in docs/decisions.md.
 */
export function nodeFlags(name: string, env: NodeJS.ProcessEnv = process.env): readonly string[] {
  const set = env[`DROVER_NODE_FLAGS_${name.toUpperCase().replace(/-/g, "_")}`] ?? env.DROVER_NODE_FLAGS;
  return set === undefined ? DEFAULT_NODE_FLAGS : set.split(/\s+/).filter(Boolean);
}

/**
 * DROVER_CPU_PROF_DIR: processes of kind `name` (all, unless DROVER_CPU_PROF_SERVICES names some,
 * comma-separated) write a V8 CPU profile there when they exit; DROVER_CPU_PROF_INTERVAL_US samples
 * more often than V8's 1 ms (NODE_OPTIONS does not take --cpu-prof-interval). Empty when not profiled.
 * For the services (platform/control-plane-processes.ts) and process hosts' runtimes (runtime-bundle.ts).
 */
export function cpuProfFlags(name: string, env: NodeJS.ProcessEnv = process.env): readonly string[] {
  const { DROVER_CPU_PROF_DIR: dir, DROVER_CPU_PROF_SERVICES: only, DROVER_CPU_PROF_INTERVAL_US: us } = env;
  if (!dir || (only && !only.split(",").includes(name))) return [];
  return ["--cpu-prof", `--cpu-prof-dir=${dir}`, ...(us ? [`--cpu-prof-interval=${us}`] : [])];
}
