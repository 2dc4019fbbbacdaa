import { ExecutionId, type Step } from "../contracts/index.ts";

/**
 * JSON with object keys sorted, so equal values always give equal bytes (and equal digests)
 * whatever order a producer wrote the keys in.
 */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== "object") return JSON.stringify(value) ?? "null";
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(",")}}`;
}

/**
 * The recorded inputs of a step: its id, kind, params and the output digests of its dependencies
 * (in dependency-id order). Every step kind is deterministic given these, and `compute` outputs
 * their digest, so a replay can re-derive every output.
 */
export function stepInputs(
  step: Pick<Step, "id" | "kind" | "params" | "dependsOn">,
  depDigests: ReadonlyMap<string, string>,
): string {
  const deps = [...step.dependsOn].sort().map((d) => [d, depDigests.get(d) ?? ""]);
  return canonicalJson({ step: step.id, kind: step.kind, params: step.params, deps });
}

/** `flaky` fails deterministically on attempts 1..failAttempts and succeeds afterwards. */
export const flakyFails = (failAttempts: number, attempt: number): boolean => attempt <= failAttempts;

/**
 * Derives the ExecutionId a runtime mints when a run starts: deterministic in (SharedRunId,
 * LocalRunId) so a retried DispatchRun of the same local run converges on the same execution.
 * `hex` is a hex digest of the pair (sha256 in the shell; domain code does no hashing IO).
 */
export const executionIdFromDigest = (hex: string): ExecutionId => ExecutionId.parse(`exec-${hex.slice(0, 32)}`);
export const executionIdSeed = (sharedRunId: string, localRunId: string): string => `${sharedRunId}\u0000${localRunId}`;
