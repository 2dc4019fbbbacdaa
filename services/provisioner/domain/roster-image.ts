import type { RuntimeSummary } from "./runtime-roster.ts";

/**
 * The serialized form of the provisioner's roster (pure: no IO): every runtime summary in memory,
 * the stream sequence folded, the order in which the ended ones ended (the bound drops the first)
 * and how many were dropped so far. A snapshot body (platform/snapshots).
 */
/** /2: a runtime summary says whether recovery suspected it (a /1 snapshot is ignored and the stream refolded). */
export const ROSTER_KIND = "provisioner-roster/2";

export interface RosterImage {
  readonly kind: typeof ROSTER_KIND;
  readonly lastSeq: number;
  readonly runtimes: readonly RuntimeSummary[];
  /** Ended runtimes still in memory, in the order they ended. */
  readonly ended: readonly string[];
  readonly dropped: number;
}

export function encodeRosterImage(image: Omit<RosterImage, "kind">): Uint8Array {
  return new TextEncoder().encode(JSON.stringify({ kind: ROSTER_KIND, ...image }));
}

const str = (x: unknown): boolean => typeof x === "string" && x.length > 0;
const count = (x: unknown): boolean => Number.isSafeInteger(x) && (x as number) >= 0;

/** Decodes and checks the shape of an image; throws on anything else (the caller then folds from 1). */
export function decodeRosterImage(body: Uint8Array): RosterImage {
  const img = JSON.parse(new TextDecoder().decode(body)) as Partial<RosterImage>;
  if (img.kind !== ROSTER_KIND) throw new Error(`not a ${ROSTER_KIND} image`);
  if (!count(img.lastSeq) || !count(img.dropped)) throw new Error("lastSeq and dropped must be counts");
  if (!Array.isArray(img.runtimes) || !Array.isArray(img.ended)) throw new Error("runtimes and ended must be arrays");
  const ids = new Set<string>();
  for (const r of img.runtimes) {
    if (!str(r?.runtimeInstanceId) || !count(r.lastSeq) || typeof r.capacityPublished !== "boolean")
      throw new Error("a runtime entry is malformed");
    ids.add(r.runtimeInstanceId);
  }
  if (img.ended.some((id) => !ids.has(id))) throw new Error("an ended id names no runtime in the image");
  return img as RosterImage;
}
