import type { OpenRuns } from "./open-runs.ts";

/**
 * The serialized form of the API's open-runs projection (pure: no IO): the sequence folded, the
 * four per-tenant sets of run ids and the count of closed runs dropped. A snapshot body (platform/snapshots).
 */
export const OPEN_RUNS_KIND = "api-open-runs/1";

type Sets = readonly (readonly [string, readonly string[]])[];
interface OpenRunsImage {
  readonly kind: typeof OPEN_RUNS_KIND;
  readonly lastSeq: number;
  readonly open: Sets;
  readonly closed: Sets;
  readonly waiting: Sets;
  readonly started: Sets;
  /** Closed runs dropped from memory before the image (absent in images without a bound: 0). */
  readonly dropped?: number;
}

const NAMES = ["open", "closed", "waiting", "started"] as const;
const setsOf = (m: ReadonlyMap<string, ReadonlySet<string>>): Sets => [...m].map(([t, ids]) => [t, [...ids]] as const);

export function encodeOpenRuns(s: OpenRuns): Uint8Array {
  const img: OpenRunsImage = {
    kind: OPEN_RUNS_KIND,
    lastSeq: s.lastSeq,
    open: setsOf(s.open),
    closed: setsOf(s.closed),
    waiting: setsOf(s.waiting),
    started: setsOf(s.started),
    dropped: s.dropped,
  };
  return new TextEncoder().encode(JSON.stringify(img));
}

const str = (x: unknown): boolean => typeof x === "string" && x.length > 0;

/**
 * Replaces `s` with the decoded image. Every check runs before anything is replaced: on a body that
 * is not an image of this kind it throws and `s` is untouched (the caller then folds from 1).
 */
export function restoreOpenRuns(s: OpenRuns, body: Uint8Array): void {
  const img = JSON.parse(new TextDecoder().decode(body)) as Partial<OpenRunsImage>;
  if (img.kind !== OPEN_RUNS_KIND) throw new Error(`not a ${OPEN_RUNS_KIND} image`);
  if (!Number.isSafeInteger(img.lastSeq) || img.lastSeq! < 0) throw new Error("lastSeq must be a count");
  if (img.dropped !== undefined && (!Number.isSafeInteger(img.dropped) || img.dropped < 0))
    throw new Error("dropped must be a count");
  for (const name of NAMES) {
    const sets = img[name];
    if (!Array.isArray(sets)) throw new Error(`${name} must be an array`);
    for (const e of sets)
      if (!Array.isArray(e) || !str(e[0]) || !Array.isArray(e[1]) || !e[1].every(str))
        throw new Error(`a ${name} entry is malformed`);
  }
  s.lastSeq = img.lastSeq!;
  for (const name of NAMES) {
    s[name].clear();
    for (const [t, ids] of img[name]!) s[name].set(t, new Set(ids));
  }
  // The closing order within a tenant is kept; across tenants the image groups them (the bound
  // then drops one tenant's oldest before another's: any order is safe, see open-runs.ts).
  s.closedOrder.clear();
  for (const [t, ids] of s.closed) for (const id of ids) s.closedOrder.add(`${t} ${id}`);
  s.dropped = img.dropped ?? 0;
}
