import { JetStreamApiError, type JetStreamManager, type StreamConfig, type StreamInfo } from "@nats-io/jetstream";
import { DroverError } from "../contracts/index.ts";
import { connectionOf } from "./connection.ts";
import { streamConfigs, type StreamOptions } from "./definitions.ts";
import type { StreamLayout } from "./layout.ts";
import { assertServerVersion } from "./server-version.ts";

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

/**
 * Creates drover's streams for `layout`, or verifies existing ones. Idempotent and safe to run
 * from every service at start-up concurrently. Checks the server version first.
 *
 * Never changes an existing stream: a stream whose settings differ from drover's definition is
 * refused with `contract-violation` listing the differences (changing e.g. deny_purge or subjects
 * behind an operator's back is not ours to do). Fails with `server-version-unsupported` on a server
 * older than 2.12; JetStream errors propagate.
 */
export async function ensureStreams(
  jsm: JetStreamManager,
  layout: StreamLayout,
  opts: StreamOptions = {},
): Promise<StreamInfo[]> {
  assertServerVersion(connectionOf(jsm).info?.version);
  const out: StreamInfo[] = [];
  for (const want of streamConfigs(layout, opts)) {
    let info: StreamInfo;
    try {
      info = await jsm.streams.info(want.name);
    } catch (e) {
      if (!(e instanceof JetStreamApiError && e.code === STREAM_NOT_FOUND)) throw e;
      // A concurrent creator with the same definition makes this add idempotent on the server.
      info = await jsm.streams.add(want);
    }
    const diffs = configDifferences(want, info.config);
    if (diffs.length > 0) {
      throw new DroverError(
        "contract-violation",
        `stream ${want.name} exists with settings that differ from drover's definition; refusing to change it: ${diffs.join("; ")}`,
        { details: { stream: want.name, differences: diffs } },
      );
    }
    out.push(info);
  }
  return out;
}
