import type { RunState } from "../../../aggregates/run.ts";
import type { DataOf } from "../../../contracts/index.ts";
import type { RuntimeRecord } from "./runtime-health.ts";

/**
 * The serialized form of recovery's folded state (pure: no IO): runs, runtimes, forensics records
 * and execution facts. Heartbeat times are not in it: they are refolded from the heartbeat stream's
 * last message per runtime at every start, as before.
 */
/**
 * /2: runtime records carry their command endpoint, and a start request (or a pool member's ready)
 * no longer marks a runtime draining; a /1 snapshot is ignored and the stream refolded.
 */
export const RECOVERY_STATE_KIND = "recovery-state/2";

export interface RecoveryImage {
  readonly kind: typeof RECOVERY_STATE_KIND;
  readonly runs: readonly { readonly tenantId: string; readonly sharedRunId: string; readonly state: RunState }[];
  readonly runtimes: readonly RuntimeRecord[];
  readonly forensics: readonly {
    readonly tenantId: string;
    readonly forensicsId: string;
    readonly item?: DataOf<"forensics.execution-recovery-candidate-detected">;
    readonly types: readonly string[];
    readonly lastSeq: number;
  }[];
  /** Terminal runs dropped from memory so far (shell/run-bound.ts). */
  readonly dropped: number;
  /** Retired runtimes and completed forensics records in memory, in the order they finished (shell/retired-bound.ts). */
  readonly doneRuntimes?: readonly string[];
  readonly completedForensics?: readonly string[];
  /** Retired runtimes and completed forensics records dropped from memory so far. */
  readonly droppedRuntimes?: number;
  readonly droppedForensics?: number;
  /** Runtimes seen again after a drop and not read back from the log yet. */
  readonly unverifiedRuntimes?: readonly string[];
  readonly execs: readonly (readonly [
    string,
    { readonly resumed?: DataOf<"exec.resumed">; readonly completedDigest?: string; readonly tenantId: string },
  ])[];
}

export function encodeRecoveryState(image: Omit<RecoveryImage, "kind">): Uint8Array {
  return new TextEncoder().encode(JSON.stringify({ kind: RECOVERY_STATE_KIND, ...image }));
}

const str = (x: unknown): boolean => typeof x === "string" && x.length > 0;

/** Decodes and checks the shape of an image; throws on anything else (the caller then folds from 1). */
export function decodeRecoveryState(body: Uint8Array): RecoveryImage {
  const img = JSON.parse(new TextDecoder().decode(body)) as Partial<RecoveryImage>;
  if (img.kind !== RECOVERY_STATE_KIND) throw new Error(`not a ${RECOVERY_STATE_KIND} image`);
  const { runs, runtimes, forensics, execs } = img;
  if (!Array.isArray(runs) || !Array.isArray(runtimes) || !Array.isArray(forensics) || !Array.isArray(execs))
    throw new Error("runs, runtimes, forensics and execs must be arrays");
  if (runs.some((r) => !str(r.tenantId) || !str(r.sharedRunId) || typeof r.state?.status !== "string"))
    throw new Error("a run entry is malformed");
  if (runtimes.some((r) => !str(r.runtimeInstanceId) || typeof r.lastSeq !== "number"))
    throw new Error("a runtime entry is malformed");
  if (forensics.some((f) => !str(f.tenantId) || !str(f.forensicsId) || !Array.isArray(f.types)))
    throw new Error("a forensics entry is malformed");
  if (execs.some((e) => !Array.isArray(e) || !str(e[0]) || !str(e[1]?.tenantId)))
    throw new Error("an exec entry is malformed");
  if (typeof img.dropped !== "number") throw new Error("dropped must be counted");
  for (const k of ["doneRuntimes", "completedForensics", "unverifiedRuntimes"] as const)
    if (img[k] !== undefined && (!Array.isArray(img[k]) || !img[k].every(str))) throw new Error(`${k} must list ids`);
  for (const k of ["droppedRuntimes", "droppedForensics"] as const)
    if (img[k] !== undefined && typeof img[k] !== "number") throw new Error(`${k} must be a count`);
  return img as RecoveryImage;
}
