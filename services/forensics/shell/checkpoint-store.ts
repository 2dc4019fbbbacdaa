import type { CheckpointStore } from "../../../streams/index.ts";
import type { ReadModelDb } from "./collections.ts";

/** The marker document's id: present only once a build from sequence 1 finished into this database. */
export const markerId = (projection: string): string => `${projection}:built`;

/**
 * Checkpoints in the read models' own database (`checkpoints`, `{ _id: <projection>, seq }`).
 * FerretDB has no transactions, so the checkpoint is saved after the data writes it covers: a
 * crash in between re-applies those events, which the projection tolerates (idempotent by seq).
 * `load` is 0 for a projection never run; `save` overwrites.
 */
export function mongoCheckpointStore(m: ReadModelDb): CheckpointStore {
  return {
    async load(projection) {
      return (await m.checkpoints.findOne({ _id: projection }))?.seq ?? 0;
    },
    async save(projection, seq) {
      await m.checkpoints.updateOne({ _id: projection }, { $set: { seq } }, { upsert: true });
    },
  };
}

/**
 * Whether a complete build exists in this database. The checkpoint alone cannot tell: if the
 * database is dropped under a running projector, its next save recreates the checkpoint at a high
 * sequence over empty collections. The marker is written only when a build from sequence 1 ends,
 * and removed when one starts, so its absence means "rebuild" (a fresh database, a drop, or a
 * rebuild that crashed half-way).
 */
export async function isBuilt(m: ReadModelDb, projection: string): Promise<boolean> {
  return (await m.checkpoints.findOne({ _id: markerId(projection) })) !== null;
}

export async function setBuilt(m: ReadModelDb, projection: string, built: boolean): Promise<void> {
  if (built) await m.checkpoints.updateOne({ _id: markerId(projection) }, { $set: { seq: 0 } }, { upsert: true });
  else await m.checkpoints.deleteOne({ _id: markerId(projection) });
}
