import { JetStreamApiError, type JetStreamManager, type StreamConfig, type StreamInfo } from "@nats-io/jetstream";
import { DroverError } from "../contracts/index.ts";
import { connectionOf } from "./connection.ts";
import { streamConfigs, type StreamOptions } from "./definitions.ts";
import type { StreamLayout } from "./layout.ts";
import { LIMIT_FIELDS } from "./limits.ts";
import { assertServerVersion } from "./server-version.ts";
import { isJetStreamUnavailable } from "./nats-errors.ts";

const STREAM_NOT_FOUND = 10059;

/** Fields of `want` whose value differs in `have` (subjects compared as sets). */
export function configDifferences(want: Partial<StreamConfig>, have: Partial<StreamConfig>): string[] {
  const diffs: string[] = [];
  for (const [key, value] of Object.entries(want)) {
    const actual = (have as Record<string, unknown>)[key];
    const same =
      Array.isArray(value) && Array.isArray(actual)
        ? [...value].sort().join("\u0000") === [...actual].sort().join("\u0000")
        : // The server omits false/zero-valued fields in some versions: treat absent as the zero value.
          actual === value || (actual === undefined && (value === false || value === 0));
    if (!same) diffs.push(`${key}: want ${JSON.stringify(value)}, have ${JSON.stringify(actual)}`);
  }
  return diffs;
}

/** `want` without its limit fields: what a service verifies of a stream whose limits are configuration. */
const withoutLimits = (want: Partial<StreamConfig>): Partial<StreamConfig> =>
  Object.fromEntries(Object.entries(want).filter(([k]) => !(LIMIT_FIELDS as readonly string[]).includes(k)));

export interface EnsureOptions extends StreamOptions {
  /**
   * Setup only (`drover admin setup`): bring the limits of the heartbeat and dead-letter streams to
   * `limits` on an existing stream (a stream created before they existed, or with other values).
   * Without it the limit fields of those two streams are not compared: services start whatever
   * limits setup chose. The event stream's fields are always compared, limits included.
   */
  readonly adjustLimits?: boolean;
  /**
   * Accept the event stream purgeable or not: for a process that can purge nothing and is not the
   * one to judge the deployment's choice (the runtime). Services compare `deny_purge` with `compactable`.
   */
  readonly anyPurgePolicy?: boolean;
}

/**
 * Creates drover's streams for `layout`, or verifies existing ones. Idempotent and safe to run
 * from every service at start-up concurrently. Checks the server version first.
 *
 * Never changes an existing stream's guarantees: a stream whose settings (all but the replica count)
 * differ from drover's definition is refused with `contract-violation` listing the differences
 * (changing e.g. deny_purge or subjects behind an operator's back is not ours to do). The one
 * exception is the limits of the heartbeat and dead-letter streams with `adjustLimits` (setup).
 * Fails with `server-version-unsupported` on a server older than 2.12; JetStream errors propagate.
 */
export async function ensureStreams(
  jsm: JetStreamManager,
  layout: StreamLayout,
  opts: EnsureOptions = {},
): Promise<StreamInfo[]> {
  assertServerVersion(connectionOf(jsm).info?.version);
  // The streams are independent: checked side by side (one round trip, not one per stream, in every
  // process's start-up); a failure is reported as when they went one after the other (the first stream's).
  const checked = await Promise.allSettled(
    streamConfigs(layout, opts).map((full) => ensureOne(jsm, layout, full, opts)),
  );
  return checked.map((c) => {
    if (c.status === "rejected") throw c.reason;
    return c.value;
  });
}

async function ensureOne(
  jsm: JetStreamManager,
  layout: StreamLayout,
  full: Partial<StreamConfig> & { name: string },
  opts: EnsureOptions,
): Promise<StreamInfo> {
  const limited = full.name !== layout.eventStream;
  const want = limited
    ? withoutLimits(full)
    : opts.anyPurgePolicy
      ? Object.fromEntries(Object.entries(full).filter(([k]) => k !== "deny_purge"))
      : full;
  let info: StreamInfo;
  try {
    info = await jsm.streams.info(full.name);
  } catch (e) {
    if (!(e instanceof JetStreamApiError && e.code === STREAM_NOT_FOUND)) throw e;
    // A concurrent creator with the same definition makes this add idempotent on the server.
    info = await jsm.streams.add(full);
  }
  // Replicas are the deployment's (NATS_REPLICAS when created; an operator may scale a stream
  // later): a party that does not know the deployment's count (a runtime) verifies the rest.
  const { num_replicas: _replicas, ...guaranteed } = want;
  const diffs = configDifferences(guaranteed, info.config);
  if (diffs.length > 0) {
    throw new DroverError(
      "contract-violation",
      `stream ${full.name} exists with settings that differ from drover's definition; refusing to change it: ${diffs.join("; ")}`,
      { details: { stream: full.name, differences: diffs } },
    );
  }
  if (limited && opts.adjustLimits && configDifferences(full, info.config).length > 0)
    info = await jsm.streams.update(full.name, { ...info.config, ...full });
  return info;
}

/**
 * `ensureStreams` that rides a short JetStream outage (a cluster electing a leader after a node
 * died: the requests time out or find no responder for seconds): retries those failures, and only
 * those, until `withinMs` has passed. A process starting during an election would otherwise exit
 * (seen in `drover proof --kill-nats-leader`: replacement runtimes exited 1 at start).
 */
export async function ensureStreamsPatiently(
  jsm: JetStreamManager,
  layout: StreamLayout,
  opts: EnsureOptions = {},
  withinMs = 60_000,
): Promise<StreamInfo[]> {
  const deadline = Date.now() + withinMs;
  for (;;) {
    try {
      return await ensureStreams(jsm, layout, opts);
    } catch (e) {
      const transient = isJetStreamUnavailable(e);
      if (!transient || Date.now() > deadline) throw e;
      await new Promise((r) => setTimeout(r, 500));
    }
  }
}
