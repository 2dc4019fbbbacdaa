/**
 * A snapshot's head: what a reader checks before trusting the state it points to (pure: no IO).
 * A snapshot is an optimisation only: any doubt and the service folds its stream from sequence 1.
 */
export interface SnapshotHead {
  /** The store's own format (this file). */
  readonly format: typeof SNAPSHOT_FORMAT;
  /** The state's format and version, named by its owner (e.g. `admission-run-index/1`). */
  readonly kind: string;
  /** The last stream sequence folded into the state: the owner folds the tail from `seq + 1`. */
  readonly seq: number;
  /** The stream it was folded from and that stream's creation time (a recreated stream is another log). */
  readonly stream: string;
  readonly streamCreated: string;
  /** sha256 (hex) and length of the serialized state, and where its chunks are. */
  readonly sha256: string;
  readonly size: number;
  readonly slot: "a" | "b";
  readonly chunks: number;
  /** Writer's clock, for operators only (never compared). */
  readonly writtenAt: string;
}

export const SNAPSHOT_FORMAT = "drover-snapshot/1";

/** What the reader knows of the stream now. */
export interface StreamNow {
  readonly name: string;
  readonly created: string;
  readonly lastSeq: number;
}

/** Why a snapshot was not used (a log line and the `drover_snapshot_rejected_total` metric). */
export type SnapshotRejection =
  "unreadable-head" | "format" | "kind" | "other-stream" | "beyond-stream" | "missing-chunk" | "checksum";

/** Parses a head; undefined when it is not one. */
export function parseHead(bytes: Uint8Array): SnapshotHead | undefined {
  try {
    const h = JSON.parse(new TextDecoder().decode(bytes)) as Partial<SnapshotHead>;
    const ok =
      typeof h.format === "string" &&
      typeof h.kind === "string" &&
      Number.isSafeInteger(h.seq) &&
      (h.seq ?? -1) >= 0 &&
      typeof h.stream === "string" &&
      typeof h.streamCreated === "string" &&
      typeof h.sha256 === "string" &&
      Number.isSafeInteger(h.size) &&
      (h.slot === "a" || h.slot === "b") &&
      Number.isSafeInteger(h.chunks) &&
      (h.chunks ?? 0) >= 1;
    return ok ? (h as SnapshotHead) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Whether a head may be trusted for `kind` over the stream as it is now: same store format and
 * state version, the same stream (name and creation time), and a sequence the stream holds (a
 * snapshot beyond the stream's end covers events this log never had).
 */
export function headRejection(h: SnapshotHead, kind: string, now: StreamNow): SnapshotRejection | undefined {
  if (h.format !== SNAPSHOT_FORMAT) return "format";
  if (h.kind !== kind) return "kind";
  if (h.stream !== now.name || h.streamCreated !== now.created) return "other-stream";
  if (h.seq > now.lastSeq) return "beyond-stream";
  return undefined;
}

/** Whether the body read back is the one the head describes (`digest`: its sha256, computed by the shell). */
export function bodyRejection(h: SnapshotHead, size: number, digest: string): SnapshotRejection | undefined {
  return size === h.size && digest === h.sha256 ? undefined : "checksum";
}

/** The slot the next snapshot goes to: never the one the current head names, so a torn write leaves the old one whole. */
export const nextSlot = (current: SnapshotHead | undefined): "a" | "b" => (current?.slot === "a" ? "b" : "a");

/**
 * When to write the next snapshot: after `everyEvents` folded events or `everyMs` since the last
 * one, whichever first, and only when the state moved past the last snapshot's sequence.
 */
export interface SnapshotPolicy {
  readonly everyEvents: number;
  readonly everyMs: number;
}
export const DEFAULT_SNAPSHOT_POLICY: SnapshotPolicy = { everyEvents: 50_000, everyMs: 60_000 };

export function snapshotDue(
  p: SnapshotPolicy,
  last: { readonly seq: number; readonly atMs: number; readonly events: number },
  seq: number,
  nowMs: number,
): boolean {
  if (seq <= last.seq) return false;
  return last.events >= p.everyEvents || nowMs - last.atMs >= p.everyMs;
}

/** A policy from the environment (`DROVER_SNAPSHOT_EVERY_EVENTS`, `DROVER_SNAPSHOT_EVERY_MS`); 0 events turns snapshots off. */
export function snapshotPolicyOf(env: Readonly<Record<string, string | undefined>>): SnapshotPolicy | undefined {
  const events = Number(env.DROVER_SNAPSHOT_EVERY_EVENTS ?? DEFAULT_SNAPSHOT_POLICY.everyEvents);
  const ms = Number(env.DROVER_SNAPSHOT_EVERY_MS ?? DEFAULT_SNAPSHOT_POLICY.everyMs);
  if (!Number.isFinite(events) || !Number.isFinite(ms) || events <= 0) return undefined;
  return { everyEvents: events, everyMs: Math.max(1_000, ms) };
}
