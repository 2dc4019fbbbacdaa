import type { RunState } from "../../../aggregates/run.ts";

/**
 * The serialized form of admission's run index (pure: no IO). Only what the fold produced is
 * written: the counts, the pending set and the runtime holdings are recomputed from the runs on
 * restore, so a snapshot cannot make them disagree with the runs it holds.
 */
export const RUN_INDEX_KIND = "admission-run-index/1";

export interface IndexedRunImage {
  readonly tenantId: string;
  readonly sharedRunId: string;
  readonly state: RunState;
  readonly sinceSeq: number;
  readonly sinceMs: number;
  readonly invalid?: { readonly seq: number; readonly error: string };
  readonly abandoned?: boolean;
  readonly checkedMs?: number;
  readonly queuedSinceMs?: number;
  readonly kindsKey?: string;
  readonly submittedMs?: number;
  /** First seen after terminal runs were dropped: not acted on until the log says it is new (index-bound). */
  readonly unverified?: boolean;
  readonly firstSeq?: number;
  /** The runtime recovery requeued the run from (replacement-hold.ts). */
  readonly lostOn?: string;
}
export interface ScaleOutImage {
  readonly tenantId: string;
  readonly requestId: string;
  readonly dedupeKey?: string;
  readonly status: string;
  readonly endedMs?: number;
  readonly recheckedMs?: number;
  readonly expiresMs?: number;
  readonly runtimeInstanceId?: string;
  readonly replaces?: string;
  readonly lastSeq: number;
}
export interface RunIndexImage {
  readonly kind: typeof RUN_INDEX_KIND;
  readonly runs: readonly IndexedRunImage[];
  readonly scaleOuts: readonly ScaleOutImage[];
  /** Terminal runs dropped from memory so far: how many, and how many per tenant and status (the runs gauge). */
  readonly evicted: { readonly count: number; readonly byStatus: readonly (readonly [string, number])[] };
}

export function encodeRunIndex(image: Omit<RunIndexImage, "kind">): Uint8Array {
  return new TextEncoder().encode(JSON.stringify({ kind: RUN_INDEX_KIND, ...image }));
}

const isNum = (x: unknown): x is number => typeof x === "number" && Number.isFinite(x);
const isStr = (x: unknown): x is string => typeof x === "string" && x.length > 0;

/** Decodes and checks the shape of an image; throws on anything else (the caller then folds from 1). */
export function decodeRunIndex(body: Uint8Array): RunIndexImage {
  const img = JSON.parse(new TextDecoder().decode(body)) as Partial<RunIndexImage>;
  if (img.kind !== RUN_INDEX_KIND) throw new Error(`not a ${RUN_INDEX_KIND} image`);
  if (!Array.isArray(img.runs) || !Array.isArray(img.scaleOuts)) throw new Error("runs and scaleOuts must be arrays");
  for (const r of img.runs)
    if (!isStr(r.tenantId) || !isStr(r.sharedRunId) || !isNum(r.sinceSeq) || typeof r.state?.status !== "string")
      throw new Error("a run entry is malformed");
  for (const s of img.scaleOuts)
    if (!isStr(s.tenantId) || !isStr(s.requestId) || !isStr(s.status) || !isNum(s.lastSeq))
      throw new Error("a scale-out entry is malformed");
  if (!isNum(img.evicted?.count) || !Array.isArray(img.evicted.byStatus)) throw new Error("evicted must be counted");
  return img as RunIndexImage;
}
