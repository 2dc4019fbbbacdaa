import type { Db } from "mongodb";
import { isBuilt, mongoCheckpointStore, PROJECTION_NAME, readModelDb } from "../../services/forensics/index.ts";

/**
 * How far the forensics read models (the run summaries, ledger and forensics rows a compacted run
 * keeps: docs/retention.md) have projected the stream: the projector's saved checkpoint, or 0 while
 * no complete build exists (a rebuild in progress has not yet written the rows of older runs).
 */
export async function forensicsProjectedThrough(db: Db): Promise<number> {
  const m = readModelDb(db);
  if (!(await isBuilt(m, PROJECTION_NAME))) return 0;
  return mongoCheckpointStore(m).load(PROJECTION_NAME);
}
