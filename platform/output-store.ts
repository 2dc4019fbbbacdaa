import { createHash } from "node:crypto";
import type { NatsConnection } from "@nats-io/transport-node";
import { Objm, type ObjectStore } from "@nats-io/obj";
import { DroverError, type StoredOutputRef } from "../contracts/index.ts";
import type { StreamLayout } from "../streams/index.ts";

/**
 * The JetStream Object Store bucket holding outputs above the inline limit, named from the layout
 * (`drover-outputs`, or `drover-outputs-<tag>` for a tagged test layout).
 */
export function outputsBucketOf(layout: StreamLayout): string {
  const tag = layout.eventStream === "DROVER" ? "" : layout.eventStream.slice("DROVER_".length).toLowerCase();
  return tag ? `drover-outputs-${tag.replace(/_/g, "-")}` : "drover-outputs";
}

/** Reads and writes large outputs by content: an object's name ends in its sha256, so it never changes. */
export interface OutputStore {
  /** Stores the bytes under `<prefix>/<sha256>` and returns the reference the journal keeps. */
  put(prefix: string, bytes: Uint8Array): Promise<StoredOutputRef>;
  /** The bytes of a referenced output; `output-store-unavailable` when missing or not matching its digest. */
  get(ref: StoredOutputRef): Promise<Uint8Array>;
}

const sha256Hex = (b: Uint8Array): string => createHash("sha256").update(b).digest("hex");

/**
 * The output store over `nc`. The bucket is created on first use (idempotent). Content-addressed
 * names make a put safe to repeat, and a zombie writer can never replace an output a journal names:
 * its bytes would have another digest, hence another name.
 */
export function createOutputStore(nc: NatsConnection, layout: StreamLayout): OutputStore {
  const bucket = outputsBucketOf(layout);
  let opened: Promise<ObjectStore> | undefined;
  const store = (): Promise<ObjectStore> => {
    // Opened, not created: only the setup identity creates the bucket (platform/nats-setup.ts); an
    // open server without setup (a test's harness) still gets it created on first use.
    opened ??= new Objm(nc)
      .open(bucket)
      .catch(() => new Objm(nc).create(bucket))
      .catch((e: unknown) => {
        opened = undefined;
        throw new DroverError("output-store-unavailable", `object store ${bucket}: ${String(e)}`, { cause: e });
      });
    return opened;
  };
  return {
    async put(prefix, bytes) {
      const digest = sha256Hex(bytes);
      const name = `${prefix}/${digest}`;
      const os = await store();
      try {
        const existing = await os.info(name);
        if (!existing || existing.deleted) await os.putBlob({ name }, bytes);
      } catch (e) {
        throw new DroverError("output-store-unavailable", `storing ${name}: ${String(e)}`, { cause: e });
      }
      return { bucket, name, size: bytes.length, digest };
    },
    async get(ref) {
      const os = ref.bucket === bucket ? await store() : await new Objm(nc).open(ref.bucket);
      let bytes: Uint8Array | null;
      try {
        bytes = await os.getBlob(ref.name);
      } catch (e) {
        throw new DroverError("output-store-unavailable", `reading ${ref.name}: ${String(e)}`, { cause: e });
      }
      if (!bytes) throw new DroverError("output-store-unavailable", `object ${ref.bucket}/${ref.name} is missing`);
      const digest = sha256Hex(bytes);
      if (digest !== ref.digest)
        throw new DroverError(
          "output-store-unavailable",
          `object ${ref.name} holds bytes of digest ${digest}, the journal recorded ${ref.digest}`,
        );
      return bytes;
    },
  };
}
