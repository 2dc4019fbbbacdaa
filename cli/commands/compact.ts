import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { candidates, parseDuration } from "../../platform/compactor/candidates.ts";
import { compactRun } from "../../platform/compactor/compact-run.ts";
import { forensicsProjectedThrough } from "../../platform/compactor/read-model-position.ts";
import { connectNats } from "../../platform/nats-connect.ts";
import { readModelClient, readModelDbName } from "../../platform/read-model-db.ts";
import { DEFAULT_LAYOUT, taggedLayout } from "../../streams/index.ts";
import { parseCommandArgs } from "../lib/args.ts";
import { EXIT, UsageError, type Command } from "./command.ts";
import { controlPlaneOfConfig } from "./rebuild-request.ts";

/** The retention window when neither --retention nor DROVER_EVENT_RETENTION says otherwise. */
export const DEFAULT_RETENTION = "30d";

/**
 * `drover admin compact [--retention 30d] [--tenant T] [--run R] [--dry-run]`: removes from the
 * event stream every finished run whose terminal event is older than the retention window, after
 * copying it to the archive (docs/retention.md). Runs as the `compactor` identity (NATS_CREDS), the
 * only one allowed to purge; reads the forensics read models' position from MONGO_URL
 * (DROVER_MONGO_DB or the database of DROVER_CONFIG's control plane) and removes nothing they have
 * not projected. A command, not a service: purge rights exist only while it runs (a CronJob or an
 * operator), and nothing keeps it in memory. Exit 0 done (each run's outcome printed), 2 bad
 * arguments, 3 NATS or MongoDB unavailable.
 */
export const compactCommand: Command = {
  name: "compact",
  summary: "archive, then remove from the stream, finished runs past the retention window (as the compactor)",
  usage:
    "drover admin compact [--retention 30d] [--tenant T] [--run R] [--dry-run]   (NATS_CREDS: the compactor identity; MONGO_URL)",
  async run(args, io) {
    const { values, positionals } = parseCommandArgs(args, {
      retention: { type: "string" },
      tenant: { type: "string" },
      run: { type: "string" },
      "dry-run": { type: "boolean" },
    });
    if (positionals.length > 0) throw new UsageError(`unexpected arguments: ${positionals.join(" ")}`);
    const text = values.retention ?? io.env.DROVER_EVENT_RETENTION ?? DEFAULT_RETENTION;
    const retentionMs = parseDuration(text);
    if (retentionMs === undefined) throw new UsageError(`retention ${JSON.stringify(text)} is not like 30d, 12h, 90m`);
    if (values.run && !values.tenant) throw new UsageError("--run needs --tenant");
    const mongoUrl = io.env.MONGO_URL;
    if (!mongoUrl) throw new UsageError("MONGO_URL is required: nothing is removed that the read models have not kept");
    const layout = io.env.DROVER_STREAM_TAG ? taggedLayout(io.env.DROVER_STREAM_TAG) : DEFAULT_LAYOUT;
    const dbName = io.env.DROVER_MONGO_DB ?? readModelDbName(io.env, await controlPlaneOfConfig(io.env.DROVER_CONFIG));
    const servers = io.env.NATS_URL ?? "nats://127.0.0.1:4222";
    let nc: NatsConnection;
    try {
      nc = await connectNats({ servers, creds: io.env.NATS_CREDS ?? "", timeout: 5_000, maxReconnectAttempts: 1 });
    } catch (e) {
      io.err(`drover compact: cannot reach NATS at ${servers}: ${(e as Error).message}\n`);
      return EXIT.unavailable;
    }
    const mongo = readModelClient(mongoUrl);
    try {
      const jsm = await jetstreamManager(nc);
      const db = mongo.db(dbName);
      const now = Date.now();
      const runs = values.run
        ? [{ tenantId: values.tenant!, sharedRunId: values.run }]
        : await candidates(jsm, layout, now - retentionMs, values.tenant);
      const deps = {
        jsm,
        js: jetstream(nc),
        layout,
        retentionMs,
        now: () => now,
        projectedThrough: () => forensicsProjectedThrough(db),
      };
      let removed = 0;
      let messages = 0;
      for (const r of runs) {
        if (values["dry-run"]) {
          io.out(`candidate run ${r.tenantId}/${r.sharedRunId}\n`);
          continue;
        }
        const out = await compactRun(deps, r.tenantId, r.sharedRunId);
        if (out.kind === "compacted") {
          removed += 1;
          messages += out.messages;
          io.out(`compacted run ${r.tenantId}/${r.sharedRunId}: ${out.messages} messages (archived ${out.copied})\n`);
        } else io.out(`kept run ${r.tenantId}/${r.sharedRunId}: ${out.skip}: ${out.detail}\n`);
      }
      io.out(`${removed} of ${runs.length} runs compacted (${messages} messages), retention ${text}\n`);
      return EXIT.ok;
    } finally {
      await mongo.close();
      await nc.close();
    }
  },
};
