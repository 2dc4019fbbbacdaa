import { TenantId } from "../../contracts/index.ts";
import { connectNats } from "../../platform/nats-connect.ts";
import { createStepCacheStore, rebuildStepCache } from "../../platform/step-cache-store.ts";
import { createEventStore, DEFAULT_LAYOUT, taggedLayout } from "../../streams/index.ts";
import { parseCommandArgs } from "../lib/args.ts";
import { EXIT, UsageError, type Command } from "./command.ts";

/**
 * `drover step-cache-rebuild --tenant T [--json]` (docs/step-cache.md "The index"): rewrites tenant
 * T's step cache index from its journals (`rebuildStepCache`): one entry per key, from the latest
 * `exec.step-completed` carrying it; a key cleared after that completion stays cleared. NATS from
 * NATS_URL with NATS_CREDS (the operator's: it writes `drover-cache.<tenant>.<key>`), the layout
 * of DROVER_STREAM_TAG when set. Exit 0 rebuilt, 2 bad arguments, 3 NATS unreachable or the
 * rebuild failed.
 */
export const stepCacheRebuildCommand: Command = {
  name: "step-cache-rebuild",
  summary: "rebuild a tenant's step cache index from its journals",
  usage: "drover step-cache-rebuild --tenant T [--json]",
  async run(args, io) {
    const { values, positionals } = parseCommandArgs(args, { tenant: { type: "string" }, json: { type: "boolean" } });
    if (positionals.length > 0) throw new UsageError(`unexpected arguments: ${positionals.join(" ")}`);
    const tenant = TenantId.safeParse(values.tenant ?? "");
    if (!tenant.success) throw new UsageError("--tenant T: a TenantId (lowercase [a-z0-9-])");
    const layout = io.env.DROVER_STREAM_TAG ? taggedLayout(io.env.DROVER_STREAM_TAG) : DEFAULT_LAYOUT;
    const servers = io.env.NATS_URL ?? "nats://127.0.0.1:4222";
    let nc;
    try {
      nc = await connectNats({ servers, creds: io.env.NATS_CREDS ?? "", timeout: 5_000, maxReconnectAttempts: 1 });
    } catch (e) {
      io.err(`drover step-cache-rebuild: cannot reach NATS at ${servers}: ${(e as Error).message}\n`);
      return EXIT.unavailable;
    }
    try {
      const t0 = Date.now();
      const keys = await rebuildStepCache(
        createEventStore(nc, layout),
        layout,
        createStepCacheStore(nc, layout),
        tenant.data,
      );
      const ms = Date.now() - t0;
      io.out(
        values.json
          ? `${JSON.stringify({ tenantId: tenant.data, keysWritten: keys, ms })}\n`
          : `step cache of ${tenant.data} rebuilt from its journals in ${ms} ms: ${keys} key(s) written\n`,
      );
      return EXIT.ok;
    } catch (e) {
      io.err(`drover step-cache-rebuild: ${(e as Error).message}\n`);
      return EXIT.unavailable;
    } finally {
      await nc.close();
    }
  },
};
