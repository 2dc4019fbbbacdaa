import type { JsMsg } from "@nats-io/jetstream";
import type { RunState } from "../../../aggregates/run.ts";
import type { HeaderReader } from "../../../streams/first-by-expectation.ts";

/*
 * What admission's index holds (run-index.ts folds the log into these): one entry per run and per
 * scale-out request, the fold's state plus what admission keeps beside it.
 */

/** One run as admission tracks it. */
export interface IndexedRun {
  readonly tenantId: string;
  readonly sharedRunId: string;
  state: RunState;
  /** Stream sequence and server time at which the run last changed (FIFO order, staleness). */
  sinceSeq: number;
  sinceMs: number;
  /** A `submitted` that failed validation (trusted producers publish straight to JetStream). */
  invalid?: { readonly seq: number; readonly error: string };
  /** Set when admission gave up on an invalid submission it cannot reject (its subject holds no valid ids). */
  abandoned?: boolean;
  /** When admission last asked the runtime about a dispatched-but-not-started placement. */
  checkedMs?: number;
  /** Server time the run entered the global queue (kept while it stays queued, whatever the reason). */
  queuedSinceMs?: number;
  /** The step kinds its DAG needs, joined (cached: runs needing the same kinds see the same runtimes). */
  kindsKey?: string;
  /** Server time of the run's submission (for the submission → dispatch latency). */
  submittedMs?: number;
  /**
   * Set on a run first seen after terminal runs were dropped (`maxTerminalRuns`): it may be one of
   * them coming back (a late or duplicate event), so nothing is decided for it until its history,
   * read from the log, says whether `firstSeq` is its first event (verify-runs.ts).
   */
  unverified?: boolean;
  firstSeq?: number;
  /** The runtime recovery requeued the run from (its last `requeued-for-*`): owed a place until placed again. */
  lostOn?: string;
}

export interface ScaleOutEntry {
  readonly tenantId: string;
  readonly requestId: string;
  dedupeKey?: string;
  status: string;
  endedMs?: number;
  /** When the liveness guard last re-read this request from the log. */
  recheckedMs?: number;
  /** The request's own expiry (its `expiresAt`): an open request past it is not progress. */
  expiresMs?: number;
  runtimeInstanceId?: string;
  /** The lost runtime a recovery replacement request replaces (`scaleout.requested` `replaces`). */
  replaces?: string;
  /** Stream sequence of the last event folded (a redelivery or an event read back twice is a no-op). */
  lastSeq: number;
}

/** A message as the index's follower delivers it (its headers: what the server checked before storing it). */
export type Delivered = Pick<JsMsg, "subject" | "seq" | "data"> & {
  readonly info?: Pick<JsMsg["info"], "timestampNanos">;
  readonly headers?: HeaderReader;
};
