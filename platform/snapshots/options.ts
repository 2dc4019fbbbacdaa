import type { SnapshotPolicy, SnapshotRejection } from "./envelope.ts";
import type { SnapshotStore } from "./store.ts";

/** How a folding service uses snapshots: where they are, when to write (no policy: read only), and metrics hooks. */
export interface SnapshotOptions {
  readonly store: SnapshotStore;
  readonly policy?: SnapshotPolicy;
  readonly onRejected?: (reason: SnapshotRejection | "decode" | "read-failed") => void;
  readonly onWritten?: (seq: number, bytes: number) => void;
}
