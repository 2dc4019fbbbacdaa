import { randomUUID } from "node:crypto";
import type { CheckpointStore } from "../../../streams/index.ts";
import { READ_MODEL_SHAPE } from "../../../contracts/read-models.ts";
import type { ReadModelDb } from "./collections.ts";

/**
 * The marker document's id: present only once a build from sequence 1 finished into this database,
 * by code writing this shape of read models (an older shape's marker does not count: rebuilt).
 */
export const markerId = (projection: string): string => `${projection}:built:v${READ_MODEL_SHAPE}`;

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
 * sequence over empty collections. The marker says "built" only when a build from sequence 1 ended
 * in this very database, so its absence means "rebuild" (a fresh database, a drop, or a rebuild
 * that crashed half-way).
 */
export async function isBuilt(m: ReadModelDb, projection: string): Promise<boolean> {
  return (await buildState(m, projection)).state === "built";
}

/**
 * The build marker: `built`; `building` with the token of a build from sequence 1 that has not
 * ended (a stop or a crash interrupted it; its rows and checkpoint are in this database, so it can
 * go on from the checkpoint); or `none` (a fresh or dropped database: build from sequence 1).
 */
export async function buildState(
  m: ReadModelDb,
  projection: string,
): Promise<{ state: "built" } | { state: "building"; token: string } | { state: "none" }> {
  const marker = await m.checkpoints.findOne({ _id: markerId(projection) });
  if (marker?.state === "built") return { state: "built" };
  if (marker?.state === "building" && typeof marker.token === "string")
    return { state: "building", token: marker.token };
  return { state: "none" };
}

/** Marks a build from sequence 1 as started; returns its token for `endBuild`. */
export async function beginBuild(m: ReadModelDb, projection: string): Promise<string> {
  const token = randomUUID();
  await m.checkpoints.replaceOne({ _id: markerId(projection) }, { seq: 0, state: "building", token }, { upsert: true });
  return token;
}

/**
 * Marks the build `token` as complete, only if its "building" marker is still there: a database
 * dropped during the build lost it (and the rows written before the drop), so this returns false
 * and the caller builds again, instead of crowning read models with a hole in them.
 */
export async function endBuild(m: ReadModelDb, projection: string, token: string): Promise<boolean> {
  const r = await m.checkpoints.updateOne(
    { _id: markerId(projection), state: "building", token },
    { $set: { state: "built" } },
  );
  return r.matchedCount === 1;
}
