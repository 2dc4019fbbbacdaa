import {
  DiscardPolicy,
  JetStreamApiError,
  RetentionPolicy,
  StorageType,
  type JetStreamClient,
  type StreamConfig,
} from "@nats-io/jetstream";
import { nanos } from "@nats-io/transport-node";
import type { StreamLayout } from "../streams/index.ts";
import { streamReplicas } from "../streams/replicas.ts";

/**
 * Single-writer leases (issue 16 "every service replicated"): a stream used like a KV bucket, one
 * subject per lease (`<prefix>-lease.<service>.<name>`), one message per subject, which ages out
 * `LEASE_TTL_MS` after it was written. Taking a lease is a publish that expects the subject empty;
 * renewing it is a publish that expects the holder's own last sequence. Both are JetStream's
 * conditional appends, so two replicas never both take or both renew it; a holder that stops
 * renewing (crashed, partitioned, paused) loses it after the TTL and the next taker's message makes
 * its late renewal fail.
 */
export const LEASE_TTL_MS = 5_000;
export const leaseStreamOf = (layout: StreamLayout): string => `${layout.eventStream}_LEASES`;
export const leasePrefixOf = (layout: StreamLayout): string => `${layout.eventPrefix}-lease`;

export function leaseStreamConfig(
  layout: StreamLayout,
  replicas = streamReplicas(),
): Partial<StreamConfig> & { name: string } {
  return {
    name: leaseStreamOf(layout),
    subjects: [`${leasePrefixOf(layout)}.>`],
    storage: StorageType.File,
    retention: RetentionPolicy.Limits,
    discard: DiscardPolicy.Old,
    max_msgs_per_subject: 1,
    max_age: nanos(LEASE_TTL_MS),
    num_replicas: replicas,
  };
}

export interface Lease {
  /** Settles when the lease is lost (another holder took it, or renewals failed for a TTL); never rejects. */
  readonly lost: Promise<string>;
  /** Stops renewing (the lease then ages out; nobody else may end it early). */
  stop(): void;
}

export interface LeaseOptions {
  readonly ttlMs?: number;
  /** How often the holder renews and a waiting replica tries again (default TTL / 5). */
  readonly everyMs?: number;
  readonly signal?: AbortSignal;
  /** Called once when the first try finds the lease held: this replica stands by. */
  readonly onStandby?: () => void;
}

/** Whether a publish failed its expectation (JetStream error 10071 "wrong last sequence"). */
const isConflict = (e: unknown) => e instanceof JetStreamApiError && e.code === 10071;

/**
 * Waits until this replica holds the lease `service.name` (subject tokens), then renews it in the
 * background. Resolves undefined if `signal` aborts first. A renewal that fails its expectation
 * means another replica holds the lease now: `lost` settles at once. A renewal that fails otherwise
 * (NATS unreachable) is retried; `lost` settles when none succeeded for `ttlMs` minus one interval,
 * before the lease can have aged out, so two holders never write at once by the holder's own clock.
 */
export async function acquireLease(
  js: JetStreamClient,
  layout: StreamLayout,
  key: { readonly service: string; readonly name: string },
  holder: string,
  o: LeaseOptions = {},
): Promise<Lease | undefined> {
  const ttlMs = o.ttlMs ?? LEASE_TTL_MS;
  const everyMs = o.everyMs ?? Math.max(100, Math.floor(ttlMs / 5));
  const subject = `${leasePrefixOf(layout)}.${key.service}.${key.name}`;
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
  let seq = 0;
  let standby = false;
  while (!o.signal?.aborted) {
    try {
      seq = (await js.publish(subject, holder, { expect: { lastSubjectSequence: 0 } })).seq;
      break;
    } catch (e) {
      if (!isConflict(e)) throw e;
      if (!standby) o.onStandby?.();
      standby = true;
      await sleep(everyMs);
    }
  }
  if (o.signal?.aborted) return undefined;
  let stopped = false;
  let lastOk = Date.now();
  const lost = (async (): Promise<string> => {
    while (!stopped) {
      await sleep(everyMs);
      if (stopped) break;
      try {
        seq = (await js.publish(subject, holder, { expect: { lastSubjectSequence: seq } })).seq;
        lastOk = Date.now();
      } catch (e) {
        if (isConflict(e)) return "another replica holds the lease";
        if (Date.now() - lastOk >= ttlMs - everyMs) return `no renewal for ${Date.now() - lastOk} ms: ${String(e)}`;
      }
    }
    return "stopped";
  })();
  return {
    lost,
    stop() {
      stopped = true;
    },
  };
}
