// The node/V8 flags each control-plane service and runtime process starts with, before its script:
// the same in `make run` (scripts/run.sh runs this file), in `startControlPlane` (the benches, the
// e2e, proof and k8s tiers) and for the provisioner's process runtimes. Plain JS: run.sh asks it
// without a TypeScript loader. Measurements: docs/decisions.md ("V8 flags").

/** The default, for every process kind. */
export const DEFAULT_NODE_FLAGS = [];

/**
 * `DROVER_NODE_FLAGS` (space-separated; empty for none) replaces the default for every process;
 * `DROVER_NODE_FLAGS_<NAME>` (e.g. `DROVER_NODE_FLAGS_RUNTIME`, `DROVER_NODE_FLAGS_API`) for one kind.
 * For measurements: what was tried is in docs/decisions.md.
 */
export function nodeFlags(name, env = process.env) {
  const set = env[`DROVER_NODE_FLAGS_${name.toUpperCase().replace(/-/g, "_")}`] ?? env.DROVER_NODE_FLAGS;
  return set === undefined ? DEFAULT_NODE_FLAGS : set.split(/\s+/).filter(Boolean);
}

// `node platform/node-flags.mjs <name>` prints that kind's flags, space-separated (scripts/run.sh).
if (process.argv[1] === import.meta.filename) console.log(nodeFlags(process.argv[2] ?? "").join(" "));
