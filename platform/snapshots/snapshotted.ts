import type { Logger } from "pino";
import type { Clock } from "../clock.ts";
import { snapshotDue, type SnapshotPolicy, type SnapshotRejection } from "./envelope.ts";
import type { SnapshotStore } from "./store.ts";

/** A folded state that can be written to and restored from a snapshot. */
export interface Snapshottable {
  /** The state's format and version: a snapshot of another kind is ignored. */
  readonly kind: string;
  /** The serialized state as it is now (synchronous: it is exactly the fold up to the last applied sequence). */
  encode(): Uint8Array;
  /** Replaces the state with the decoded one; throws (changing nothing) when `body` is not a state of this kind. */
  restore(body: Uint8Array): void;
}

export interface SnapshotHooks {
  readonly log: Logger;
  /** Told each snapshot not used and why (the `drover_snapshot_rejected_total` metric). */
  readonly onRejected?: (reason: SnapshotRejection | "decode" | "read-failed") => void;
}

/**
 * Restores `state` from its snapshot when one is there and may be trusted, and returns the first
 * sequence the follower must fold (the snapshot's + 1, or 1). Anything doubtful (checksum, format,
 * another stream, a sequence the stream does not hold, a body that does not decode, a read error)
 * is logged and counted, and the fold starts from 1 on the untouched empty state.
 */
export async function restoreFromSnapshot(
  store: SnapshotStore,
  state: Snapshottable,
  hooks: SnapshotHooks,
): Promise<{ readonly fromSeq: number; readonly restoredSeq?: number }> {
  const reject = (reason: SnapshotRejection | "decode" | "read-failed", detail: object) => {
    hooks.log.warn({ kind: state.kind, reason, ...detail }, "snapshot ignored: folding the stream from sequence 1");
    hooks.onRejected?.(reason);
    return { fromSeq: 1 };
  };
  let read: Awaited<ReturnType<SnapshotStore["read"]>>;
  try {
    read = await store.read(state.kind);
  } catch (e) {
    return reject("read-failed", { err: String(e) });
  }
  if (!read.found) return { fromSeq: 1 };
  if ("rejected" in read) return reject(read.rejected, { seq: read.head?.seq, snapshotKind: read.head?.kind });
  try {
    state.restore(read.body);
  } catch (e) {
    return reject("decode", { seq: read.head.seq, err: String(e) });
  }
  hooks.log.info({ kind: state.kind, seq: read.head.seq, bytes: read.head.size }, "state restored from snapshot");
  return { fromSeq: read.head.seq + 1, restoredSeq: read.head.seq };
}

export interface SnapshotWriter {
  /** Call after each folded message (synchronously after applying it). */
  applied(seq: number): void;
  /** Writes a snapshot now if the state moved past the last one (tests, shutdown). */
  flush(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * Writes `state` periodically (policy: every N folded events or T ms, whichever first), one write
 * at a time. The state is encoded synchronously at the moment its sequence is known, so the
 * snapshot's sequence is exactly what it covers. A failed write is logged; the next one retries.
 */
export function snapshotWriter(
  store: SnapshotStore,
  state: Snapshottable,
  policy: SnapshotPolicy,
  clock: Clock,
  hooks: SnapshotHooks & { readonly startSeq: number; readonly onWritten?: (seq: number, bytes: number) => void },
): SnapshotWriter {
  const last = { seq: hooks.startSeq, atMs: clock.now().getTime(), events: 0 };
  let appliedSeq = hooks.startSeq;
  let writing: Promise<void> | undefined;
  const write = (): Promise<void> => {
    if (writing || appliedSeq <= last.seq) return writing ?? Promise.resolve();
    const seq = appliedSeq;
    const body = state.encode();
    last.seq = seq;
    last.atMs = clock.now().getTime();
    last.events = 0;
    writing = store
      .write(state.kind, seq, body, clock.now())
      .then(
        (h) => {
          hooks.log.info({ kind: state.kind, seq, bytes: h.size }, "snapshot written");
          hooks.onWritten?.(seq, h.size);
        },
        (e: unknown) => hooks.log.warn({ kind: state.kind, seq, err: String(e) }, "snapshot write failed"),
      )
      .finally(() => {
        writing = undefined;
      });
    return writing;
  };
  const due = () => snapshotDue(policy, last, appliedSeq, clock.now().getTime());
  const timer = setInterval(() => void (due() && write()), Math.min(policy.everyMs, 5_000));
  timer.unref?.();
  return {
    applied(seq) {
      appliedSeq = Math.max(appliedSeq, seq);
      last.events++;
      if (due()) void write();
    },
    async flush() {
      await writing;
      await write();
    },
    async stop() {
      clearInterval(timer);
      await writing;
    },
  };
}
