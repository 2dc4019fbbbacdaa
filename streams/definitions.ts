import { DiscardPolicy, RetentionPolicy, StorageType, type StreamConfig } from "@nats-io/jetstream";
import { nanos } from "@nats-io/transport-node";
import type { StreamLayout } from "./layout.ts";
import { DEFAULT_STREAM_LIMITS, type StreamLimits } from "./limits.ts";
import { streamReplicas } from "./replicas.ts";

/** Knobs that vary by deployment; everything else about the streams is fixed by drover's guarantees. */
export interface StreamOptions {
  /** Replicas of each stream (1 on one machine; 3 in a cluster); default: NATS_REPLICAS (replicas.ts). */
  readonly replicas?: number;
  /** Dedupe window of the event stream in ms; at least 2 min so a timed-out publish can be retried. */
  readonly duplicateWindowMs?: number;
  /** Limits of the heartbeat and dead-letter streams (streams/limits.ts); the defaults when absent. */
  readonly limits?: StreamLimits;
  /**
   * Create the event stream purgeable (`deny_purge: false`) so the compactor can remove finished
   * runs past retention (docs/retention.md); only the compactor identity holds the purge right.
   * A creation-time choice: the server never lifts `deny_purge` from an existing stream.
   */
  readonly compactable?: boolean;
}

export const MIN_DUPLICATE_WINDOW_MS = 120_000;
/** Heartbeats kept per runtime: enough to see the last few beats, never a history. */
export const HEARTBEATS_PER_RUNTIME = DEFAULT_STREAM_LIMITS.heartbeatsPerRuntime;
export const HEARTBEAT_MAX_AGE_MS = DEFAULT_STREAM_LIMITS.heartbeatMaxAgeMs;

/** The advisory subjects the dead-letter stream captures for the event stream (every consumer). */
export function deadLetterSubjects(layout: StreamLayout): string[] {
  return [
    `$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.${layout.eventStream}.*`,
    `$JS.EVENT.ADVISORY.CONSUMER.MSG_TERMINATED.${layout.eventStream}.*`,
  ];
}

/**
 * The event stream: one total order of every domain event. `deny_delete`/`deny_purge` make it an
 * immutable forensic log (the server refuses both, and the flags cannot be turned off later); a
 * `compactable` stream keeps `deny_delete` and leaves purge to the compactor's permission;
 * `allow_atomic` enables multi-aggregate transitions; `allow_direct` makes aggregate reads cheap;
 * no per-subject limit, ever: that would silently drop history.
 */
export function eventStreamConfig(
  layout: StreamLayout,
  opts: StreamOptions = {},
): Partial<StreamConfig> & { name: string } {
  const window = opts.duplicateWindowMs ?? MIN_DUPLICATE_WINDOW_MS;
  if (window < MIN_DUPLICATE_WINDOW_MS)
    throw new RangeError(
      `duplicate window ${window}ms is below the ${MIN_DUPLICATE_WINDOW_MS}ms drover needs for safe retries`,
    );
  return {
    name: layout.eventStream,
    subjects: [`${layout.eventPrefix}.>`],
    storage: StorageType.File,
    retention: RetentionPolicy.Limits,
    discard: DiscardPolicy.Old,
    num_replicas: opts.replicas ?? streamReplicas(),
    max_msgs: -1,
    max_bytes: -1,
    max_age: 0,
    max_msgs_per_subject: -1,
    duplicate_window: nanos(window),
    deny_delete: true,
    deny_purge: !opts.compactable,
    allow_atomic: true,
    allow_direct: true,
    allow_rollup_hdrs: false,
  };
}

/** Heartbeats: the last few beats per runtime, aged out in minutes; read by last-per-subject. */
export function heartbeatStreamConfig(
  layout: StreamLayout,
  opts: StreamOptions = {},
): Partial<StreamConfig> & { name: string } {
  const l = opts.limits ?? DEFAULT_STREAM_LIMITS;
  return {
    name: layout.heartbeatStream,
    subjects: [`${layout.heartbeatPrefix}.>`],
    storage: StorageType.File,
    retention: RetentionPolicy.Limits,
    discard: DiscardPolicy.Old,
    num_replicas: opts.replicas ?? streamReplicas(),
    max_msgs_per_subject: l.heartbeatsPerRuntime,
    max_age: nanos(l.heartbeatMaxAgeMs),
    max_bytes: l.heartbeatMaxBytes,
    allow_direct: true,
  };
}

/**
 * Dead letters: the server's own advisories for messages of the event stream that a consumer gave
 * up on (max deliveries reached, or `term()`ed), each naming the stream sequence, consumer and,
 * for terms, the reason. There is no built-in DLQ in JetStream; capturing the advisories is the
 * documented way and needs no cooperation from the consumer that failed. The event itself stays
 * in the event stream (deny_delete), so the advisory is a complete pointer to it. Bounded by age,
 * count and bytes (oldest first): a listing of recent give-ups, not an archive.
 */
export function deadLetterStreamConfig(
  layout: StreamLayout,
  opts: StreamOptions = {},
): Partial<StreamConfig> & { name: string } {
  const l = opts.limits ?? DEFAULT_STREAM_LIMITS;
  return {
    name: layout.deadLetterStream,
    subjects: deadLetterSubjects(layout),
    storage: StorageType.File,
    retention: RetentionPolicy.Limits,
    discard: DiscardPolicy.Old,
    num_replicas: opts.replicas ?? streamReplicas(),
    max_age: nanos(l.deadLetterMaxAgeMs),
    max_msgs: l.deadLetterMaxMsgs,
    max_bytes: l.deadLetterMaxBytes,
    allow_direct: true,
  };
}

/** Every stream drover needs for a layout, in creation order. */
export function streamConfigs(
  layout: StreamLayout,
  opts: StreamOptions = {},
): Array<Partial<StreamConfig> & { name: string }> {
  return [eventStreamConfig(layout, opts), heartbeatStreamConfig(layout, opts), deadLetterStreamConfig(layout, opts)];
}
