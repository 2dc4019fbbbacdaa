import { createHash } from "node:crypto";
import { gunzipSync, gzipSync } from "node:zlib";
import { DiscardPolicy, jetstream, RetentionPolicy, StorageType, type StreamConfig } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import type { StreamLayout } from "../../streams/index.ts";
import { isNotFound } from "../../streams/nats-errors.ts";
import {
  bodyRejection,
  headRejection,
  nextSlot,
  parseHead,
  SNAPSHOT_FORMAT,
  type SnapshotHead,
  type SnapshotRejection,
} from "./envelope.ts";
import { streamReplicas } from "../../streams/replicas.ts";

/**
 * Snapshots live in a plain stream, one subject per owner and part (`<prefix>-snap.<owner>.head`,
 * `<prefix>-snap.<owner>.<slot>.<chunk>`), one message per subject: a key-value store whose keys
 * NATS rights can name exactly (a KV bucket's values are capped at max_payload, an object store's
 * chunks are on random subjects no right can scope to an owner). Created only by setup.
 */
export const snapshotStreamOf = (layout: StreamLayout): string => `${layout.eventStream}_SNAPSHOTS`;
export const snapshotPrefixOf = (layout: StreamLayout): string => `${layout.eventPrefix}-snap`;
/** Bytes per chunk message (below nats-server's default 1 MiB max_payload). */
export const SNAPSHOT_CHUNK_BYTES = 512 * 1024;

export function snapshotStreamConfig(
  layout: StreamLayout,
  replicas = streamReplicas(),
): Partial<StreamConfig> & { name: string } {
  return {
    name: snapshotStreamOf(layout),
    subjects: [`${snapshotPrefixOf(layout)}.>`],
    storage: StorageType.File,
    retention: RetentionPolicy.Limits,
    discard: DiscardPolicy.Old,
    max_msgs_per_subject: 1,
    num_replicas: replicas,
    allow_direct: true,
  };
}

export type SnapshotRead =
  | { readonly found: false }
  | { readonly found: true; readonly head: SnapshotHead; readonly body: Uint8Array }
  | { readonly found: true; readonly rejected: SnapshotRejection; readonly head?: SnapshotHead };

/** One owner's snapshot: its head and its chunks, read and written by subject only. */
export interface SnapshotStore {
  /** The current snapshot of `kind`, checked against the event stream as it is now. */
  read(kind: string): Promise<SnapshotRead>;
  /** Writes `body` as the state covering the event stream up to `seq`: chunks to the free slot, then the head. */
  write(kind: string, seq: number, body: Uint8Array, writtenAt: Date): Promise<SnapshotHead>;
}

const sha256Hex = (b: Uint8Array): string => createHash("sha256").update(b).digest("hex");

export function createSnapshotStore(nc: NatsConnection, layout: StreamLayout, owner: string): SnapshotStore {
  const js = jetstream(nc);
  const stream = snapshotStreamOf(layout);
  const base = `${snapshotPrefixOf(layout)}.${owner}`;
  const getOf = async (subject: string): Promise<Uint8Array | undefined> => {
    const jsm = await js.jetstreamManager();
    return jsm.direct.getMessage(stream, { last_by_subj: subject }).then(
      (m) => m?.data,
      (e: unknown) => {
        if (isNotFound(e)) return undefined;
        throw e;
      },
    );
  };
  const eventStreamNow = async () => {
    const jsm = await js.jetstreamManager();
    const info = await jsm.streams.info(layout.eventStream);
    return { name: info.config.name, created: info.created, lastSeq: info.state.last_seq };
  };
  let current: SnapshotHead | undefined;
  return {
    async read(kind) {
      const raw = await getOf(`${base}.head`);
      if (!raw) return { found: false };
      const head = parseHead(raw);
      if (!head) return { found: true, rejected: "unreadable-head" };
      current = head;
      const rejected = headRejection(head, kind, await eventStreamNow());
      if (rejected) return { found: true, rejected, head };
      const parts = await Promise.all(
        Array.from({ length: head.chunks }, (_, i) => getOf(`${base}.${head.slot}.${i}`)),
      );
      if (parts.some((p) => p === undefined)) return { found: true, rejected: "missing-chunk", head };
      const gz = Buffer.concat(parts as Uint8Array[]);
      const bad = bodyRejection(head, gz.length, sha256Hex(gz));
      if (bad) return { found: true, rejected: bad, head };
      return { found: true, head, body: new Uint8Array(gunzipSync(gz)) };
    },
    async write(kind, seq, body, writtenAt) {
      if (!current) {
        const raw = await getOf(`${base}.head`);
        current = raw ? parseHead(raw) : undefined;
      }
      const gz = gzipSync(body, { level: 1 });
      const slot = nextSlot(current);
      const chunks = Math.max(1, Math.ceil(gz.length / SNAPSHOT_CHUNK_BYTES));
      for (let i = 0; i < chunks; i++)
        await js.publish(`${base}.${slot}.${i}`, gz.subarray(i * SNAPSHOT_CHUNK_BYTES, (i + 1) * SNAPSHOT_CHUNK_BYTES));
      const jsm = await js.jetstreamManager();
      const info = await jsm.streams.info(layout.eventStream);
      const head: SnapshotHead = {
        format: SNAPSHOT_FORMAT,
        kind,
        seq,
        stream: info.config.name,
        streamCreated: info.created,
        sha256: sha256Hex(gz),
        size: gz.length,
        slot,
        chunks,
        writtenAt: writtenAt.toISOString(),
      };
      await js.publish(`${base}.head`, JSON.stringify(head));
      current = head;
      return head;
    },
  };
}
