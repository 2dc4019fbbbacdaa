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
