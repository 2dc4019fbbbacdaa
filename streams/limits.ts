/**
 * The retention limits of the two streams that are not the forensic log (docs/retention.md):
 * HEARTBEATS is read only for freshness (the last beat per runtime), the dead-letter stream is
 * listed by `readDeadLetters`, oldest first. Both discard their oldest messages at a limit; neither
 * holds anything the event stream does not (a dead letter points at an event that stays there).
 * These fields are the only ones `drover admin setup` changes on an existing stream.
 */
export interface StreamLimits {
  /** How long a heartbeat is kept (ms). A runtime silent for longer has no heartbeat at all: stale. */
  readonly heartbeatMaxAgeMs: number;
  /** Heartbeats kept per runtime (per subject): freshness reads only the last one. */
  readonly heartbeatsPerRuntime: number;
  /** Bytes of the whole heartbeat stream (oldest beats go first). */
  readonly heartbeatMaxBytes: number;
  /** How long a dead letter is listed (ms). */
  readonly deadLetterMaxAgeMs: number;
  /** Dead letters kept at most (oldest go first). */
  readonly deadLetterMaxMsgs: number;
  /** Bytes of the dead-letter stream. */
  readonly deadLetterMaxBytes: number;
}

const MIB = 1024 * 1024;
const DAY_MS = 24 * 60 * 60_000;

export const DEFAULT_STREAM_LIMITS: StreamLimits = {
  heartbeatMaxAgeMs: 10 * 60_000,
  heartbeatsPerRuntime: 3,
  heartbeatMaxBytes: 256 * MIB,
  deadLetterMaxAgeMs: 30 * DAY_MS,
  deadLetterMaxMsgs: 100_000,
  deadLetterMaxBytes: 256 * MIB,
};

/** Below this a heartbeat could age out between two beats of a healthy runtime (they beat every few seconds). */
export const MIN_HEARTBEAT_MAX_AGE_MS = 60_000;

/** The limits the stream configuration fields carry (JetStream's names); the ones setup may change in place. */
export const LIMIT_FIELDS = ["max_age", "max_msgs", "max_bytes", "max_msgs_per_subject"] as const;

const ENV: Readonly<Record<keyof StreamLimits, string>> = {
  heartbeatMaxAgeMs: "DROVER_HEARTBEAT_MAX_AGE_MS",
  heartbeatsPerRuntime: "DROVER_HEARTBEATS_PER_RUNTIME",
  heartbeatMaxBytes: "DROVER_HEARTBEAT_MAX_BYTES",
  deadLetterMaxAgeMs: "DROVER_DLQ_MAX_AGE_MS",
  deadLetterMaxMsgs: "DROVER_DLQ_MAX_MSGS",
  deadLetterMaxBytes: "DROVER_DLQ_MAX_BYTES",
};

/** The limits with `partial` over the defaults; throws RangeError on a non-positive or too-short value. */
export function streamLimits(partial: Partial<StreamLimits> = {}): StreamLimits {
  const l = { ...DEFAULT_STREAM_LIMITS, ...partial };
  for (const [k, v] of Object.entries(l))
    if (!Number.isSafeInteger(v) || v <= 0)
      throw new RangeError(`stream limit ${k} must be a positive integer, got ${v}`);
  if (l.heartbeatMaxAgeMs < MIN_HEARTBEAT_MAX_AGE_MS)
    throw new RangeError(`heartbeat max age ${l.heartbeatMaxAgeMs}ms is below ${MIN_HEARTBEAT_MAX_AGE_MS}ms`);
  return l;
}

/** The limits from the environment (`DROVER_HEARTBEAT_MAX_AGE_MS`, `DROVER_DLQ_MAX_MSGS`, …), defaults for unset ones. */
export function streamLimitsFromEnv(env: Readonly<Record<string, string | undefined>>): StreamLimits {
  const partial: Partial<Record<keyof StreamLimits, number>> = {};
  for (const [k, name] of Object.entries(ENV) as [keyof StreamLimits, string][]) {
    const raw = env[name];
    if (raw !== undefined && raw !== "") partial[k] = Number(raw);
  }
  try {
    return streamLimits(partial);
  } catch (e) {
    throw new RangeError(`${(e as Error).message} (from ${Object.values(ENV).join(", ")})`);
  }
}

/**
 * Whether the event stream is (to be) compactable: `DROVER_EVENT_COMPACTION=on` (setup creates it
 * so; every service expects it so), unset or `off` for the immutable log. Anything else throws.
 */
export function eventCompactionFromEnv(env: Readonly<Record<string, string | undefined>>): boolean {
  const v = env.DROVER_EVENT_COMPACTION ?? "";
  if (v === "" || v === "off") return false;
  if (v === "on") return true;
  throw new RangeError(`DROVER_EVENT_COMPACTION must be on or off, got ${JSON.stringify(v)}`);
}
