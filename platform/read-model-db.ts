import { MongoClient } from "mongodb";

/**
 * The MongoDB database of the forensics read models, shared by the projector that writes it and
 * the API that reads it. DROVER_MONGO_DB names it; otherwise `drover_<controlPlaneId>`, suffixed
 * with DROVER_STREAM_TAG so isolated runs on one server never share read models. FerretDB accepts
 * only latin letters, digits, `_` and `-` (and no `_ferretdb_` prefix), so `-` becomes `_`.
 */
export function readModelDbName(env: NodeJS.ProcessEnv, controlPlaneId: string): string {
  if (env.DROVER_MONGO_DB) return env.DROVER_MONGO_DB;
  const tag = env.DROVER_STREAM_TAG ? `_${env.DROVER_STREAM_TAG}` : "";
  return `drover_${controlPlaneId}${tag}`.replace(/-/g, "_").slice(0, 63);
}

/**
 * A client for the read models. `ignoreUndefined` keeps absent optional fields absent (not
 * `null`), so a document reads back exactly as folded. Pass a URL with
 * `directConnection=true&retryWrites=false` for FerretDB (no replica set, no retryable writes).
 * Connecting is lazy: the first operation connects, and fails after `serverSelectionTimeoutMS`.
 */
export function readModelClient(url: string, opts: { serverSelectionTimeoutMS?: number } = {}): MongoClient {
  return new MongoClient(url, {
    ignoreUndefined: true,
    serverSelectionTimeoutMS: opts.serverSelectionTimeoutMS ?? 5_000,
    appName: "drover",
  });
}

// Moved to control-subject.ts (the CLI and the capacity service use it without MongoDB); kept here for forensics.
export { controlSubject } from "./control-subject.ts";
