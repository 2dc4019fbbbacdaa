import type { ServiceContext } from "../bootstrap.ts";
import { standingFromLog, startRuntimeCallout } from "./callout.ts";
import { runtimePasswordFor } from "./runtime-rights.ts";

/** Default lifetime of a runtime's minted NATS user (DROVER_RUNTIME_NATS_TTL_MS). */
export const RUNTIME_NATS_TTL_MS = 10 * 60_000;

/**
 * Starts the runtimes' auth callout when DROVER_NATS_CALLOUT_SEED is set (and removes it from the
 * environment): returns how to derive the NATS_CREDS of a runtime this provisioner starts, and how
 * to stop answering. Undefined on an open server (no seed).
 */
export function runtimeCalloutFromEnv(
  ctx: Pick<ServiceContext, "nc" | "jsm" | "layout" | "log">,
  secret: string,
): { credsFor(runtimeInstanceId: string): string; stop(): void } | undefined {
  const seed = process.env.DROVER_NATS_CALLOUT_SEED;
  delete process.env.DROVER_NATS_CALLOUT_SEED;
  if (!seed) return undefined;
  const ttl = Number(process.env.DROVER_RUNTIME_NATS_TTL_MS ?? RUNTIME_NATS_TTL_MS);
  const sub = startRuntimeCallout({
    nc: ctx.nc,
    layout: ctx.layout,
    secret,
    issuerSeed: seed,
    ttlMs: ttl,
    standing: standingFromLog(ctx.jsm, ctx.layout),
    now: Date.now,
    log: (f, m) => ctx.log.info(f, m),
  });
  return {
    credsFor: (id) => `${id}:${runtimePasswordFor(secret, ctx.layout.eventPrefix, id)}`,
    stop: () => sub.unsubscribe(),
  };
}
