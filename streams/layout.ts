/**
 * Where drover's events live. Production uses the defaults (stream DROVER on `drover.>`,
 * HEARTBEATS on `drover-hb.>`); tests pass a fresh layout per test so many can share one server.
 * Nothing may assume there is exactly one stream: every subject is built from a layout.
 */
export interface StreamLayout {
  /** JetStream stream holding every domain event, one total order. */
  readonly eventStream: string;
  /** First subject token(s) of domain events, e.g. `drover`. */
  readonly eventPrefix: string;
  /** JetStream stream holding heartbeats (per-subject limit). */
  readonly heartbeatStream: string;
  /** First subject token(s) of heartbeats, e.g. `drover-hb`. */
  readonly heartbeatPrefix: string;
  /** Stream capturing messages a consumer gave up on (max deliveries, term). */
  readonly deadLetterStream: string;
  readonly deadLetterPrefix: string;
}

export const DEFAULT_LAYOUT: StreamLayout = {
  eventStream: "DROVER",
  eventPrefix: "drover",
  heartbeatStream: "HEARTBEATS",
  heartbeatPrefix: "drover-hb",
  deadLetterStream: "DROVER_DLQ",
  deadLetterPrefix: "drover-dlq",
};

/** A layout whose names all carry `tag` (lowercase [a-z0-9-]): for isolated tests on a shared server. */
export function taggedLayout(tag: string): StreamLayout {
  const up = tag.toUpperCase().replace(/-/g, "_");
  return {
    eventStream: `DROVER_${up}`,
    eventPrefix: `${tag}.drover`,
    heartbeatStream: `HEARTBEATS_${up}`,
    heartbeatPrefix: `${tag}.drover-hb`,
    deadLetterStream: `DROVER_DLQ_${up}`,
    deadLetterPrefix: `${tag}.drover-dlq`,
  };
}
