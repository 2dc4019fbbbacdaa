import { createHash } from "node:crypto";
import {
  DiscardPolicy,
  jetstream,
  JetStreamApiError,
  RetentionPolicy,
  StorageType,
  type StreamConfig,
} from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { DroverError, isSubjectSafeId, type StoredOutputRef } from "../contracts/index.ts";
import type { StreamLayout } from "../streams/index.ts";
import { isNotFound } from "../streams/nats-errors.ts";
import { streamReplicas } from "../streams/replicas.ts";

/**
 * Outputs above the inline limit live in a plain stream with tenant-scoped subjects
 * (`<prefix>-out.<tenant>.<sha256>.<chunk>`), so a runtime's NATS rights can name its tenants'
 * outputs exactly (docs/nats-identities.md "Outputs"): written chunk by chunk, each chunk on its
 * own subject, and read chunk by chunk by the subject-form Direct Get (the request subject names
 * the chunk): no reader creates a consumer on this stream.
 */
export function outputsStreamOf(layout: StreamLayout): string {
  return `${layout.eventStream}_OUTPUTS`;
}
export const outputsPrefixOf = (layout: StreamLayout): string => `${layout.eventPrefix}-out`;

/** Bytes per chunk message (nats-server's default max_payload is 1 MiB). */
export const OUTPUT_CHUNK_BYTES = 256 * 1024;

/**
 * The outputs stream: one message per subject, ever (`max_msgs_per_subject: 1` with
 * `discard_new_per_subject`): the server refuses a second write of a chunk, so a stored output
 * cannot be replaced, whoever writes. Created only by the setup identity (nats-setup.ts).
 */
export function outputsStreamConfig(
  layout: StreamLayout,
  replicas = streamReplicas(),
): Partial<StreamConfig> & { name: string } {
  return {
    name: outputsStreamOf(layout),
    subjects: [`${outputsPrefixOf(layout)}.>`],
    storage: StorageType.File,
    retention: RetentionPolicy.Limits,
    discard: DiscardPolicy.New,
    discard_new_per_subject: true,
    max_msgs_per_subject: 1,
    num_replicas: replicas,
    allow_direct: true,
  };
}

/** Reads and writes large outputs by content: an object's name ends in its sha256, so it never changes. */
export interface OutputStore {
  /** Stores the bytes of `<tenant>/…` prefix `prefix` and returns the reference the journal keeps. */
  put(prefix: string, bytes: Uint8Array): Promise<StoredOutputRef>;
  /** The bytes of a referenced output; `output-store-unavailable` when missing or not matching its digest. */
  get(ref: StoredOutputRef): Promise<Uint8Array>;
}

const sha256Hex = (b: Uint8Array): string => createHash("sha256").update(b).digest("hex");
/** Chunks read at once (Direct Gets in flight) when an output is read back. */
const READ_PARALLEL = 8;

/** A second write of a chunk: wrong last subject sequence, or the per-subject limit (discard new). */
const ALREADY_STORED = new Set([10071, 10077]);

const tenantOf = (name: string): string => {
  const t = name.slice(0, name.indexOf("/"));
  if (!isSubjectSafeId(t)) throw new DroverError("output-store-unavailable", `output name ${name} names no tenant`);
  return t;
};

/**
 * The output store over `nc`. Content-addressed and write-once: a put is safe to repeat (chunks
 * already stored are refused by the server and skipped), and no writer can replace an output a
 * journal names. A read checks the digest.
 */
export function createOutputStore(nc: NatsConnection, layout: StreamLayout): OutputStore {
  const stream = outputsStreamOf(layout);
  const js = jetstream(nc);
  const subjectOf = (tenant: string, digest: string) => `${outputsPrefixOf(layout)}.${tenant}.${digest}`;
  const unavailable = (what: string, e: unknown) =>
    new DroverError("output-store-unavailable", `${what}: ${String(e)}`, { cause: e });
  // Each chunk is on its own subject, and the ref's size says how many there are: every chunk is
  // read by the subject-form Direct Get (`$JS.API.DIRECT.GET.<stream>.<chunk subject>`), so no
  // reader needs a consumer on the outputs stream. Undefined where a chunk is missing.
  const chunks = async (ref: StoredOutputRef): Promise<(Uint8Array | undefined)[]> => {
    const subject = subjectOf(tenantOf(ref.name), ref.digest);
    const jsm = await js.jetstreamManager();
    const n = Math.max(1, Math.ceil(ref.size / OUTPUT_CHUNK_BYTES));
    const out: (Uint8Array | undefined)[] = [];
    for (let i = 0; i < n; i += READ_PARALLEL) {
      const batch = Array.from({ length: Math.min(READ_PARALLEL, n - i) }, (_, k) =>
        jsm.direct.getMessage(stream, { last_by_subj: `${subject}.${i + k}` }).then(
          (m) => m?.data,
          (e: unknown) => {
            if (isNotFound(e)) return undefined;
            throw e;
          },
        ),
      );
      out.push(...(await Promise.all(batch)));
    }
    return out;
  };
  return {
    async put(prefix, bytes) {
      const digest = sha256Hex(bytes);
      const name = `${prefix}/${digest}`;
      const subject = subjectOf(tenantOf(name), digest);
      try {
        for (let i = 0, off = 0; off < bytes.length || i === 0; i++, off += OUTPUT_CHUNK_BYTES) {
          try {
            await js.publish(`${subject}.${i}`, bytes.subarray(off, off + OUTPUT_CHUNK_BYTES), {
              expect: { lastSubjectSequence: 0 },
            });
          } catch (e) {
            if (!(e instanceof JetStreamApiError && ALREADY_STORED.has(e.code))) throw e;
          }
        }
      } catch (e) {
        throw unavailable(`storing ${name}`, e);
      }
      return { bucket: stream, name, size: bytes.length, digest };
    },
    async get(ref) {
      let bytes: Uint8Array | null;
      try {
        if (ref.bucket !== stream) throw new Error(`not in this layout's outputs stream ${stream}`);
        const parts = await chunks(ref);
        bytes = parts.every((p) => p !== undefined) ? Buffer.concat(parts as Uint8Array[]) : null;
      } catch (e) {
        throw unavailable(`reading ${ref.name}`, e);
      }
      if (!bytes) throw new DroverError("output-store-unavailable", `object ${ref.bucket}/${ref.name} is missing`);
      const digest = sha256Hex(bytes);
      if (digest !== ref.digest)
        throw new DroverError(
          "output-store-unavailable",
          `object ${ref.name} holds bytes of digest ${digest}, the journal recorded ${ref.digest}`,
        );
      return new Uint8Array(bytes);
    },
  };
}
