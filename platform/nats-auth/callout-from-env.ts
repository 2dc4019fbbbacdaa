import type { StreamLayout } from "../../streams/index.ts";
import { runtimePasswordFor } from "./runtime-rights.ts";

/** Default lifetime of a runtime's minted NATS user (DROVER_RUNTIME_NATS_TTL_MS). */
export const RUNTIME_NATS_TTL_MS = 10 * 60_000;

export interface RuntimeCalloutSettings {
  /** DROVER_NATS_CALLOUT_SEED: the account key the server trusts as the callout issuer. */
  readonly seed: string;
  readonly ttlMs: number;
  /** The NATS_CREDS of a runtime this provisioner starts. */
  credsFor(runtimeInstanceId: string): string;
}

/**
 * The runtimes' auth callout settings when DROVER_NATS_CALLOUT_SEED is set (and removes it from the
 * environment); the callout itself (callout.ts) runs on the provisioner's responders thread.
 * Undefined on an open server (no seed).
 */
export function runtimeCalloutFromEnv(layout: StreamLayout, secret: string): RuntimeCalloutSettings | undefined {
  const seed = process.env.DROVER_NATS_CALLOUT_SEED;
  delete process.env.DROVER_NATS_CALLOUT_SEED;
  if (!seed) return undefined;
  return {
    seed,
    ttlMs: Number(process.env.DROVER_RUNTIME_NATS_TTL_MS ?? RUNTIME_NATS_TTL_MS),
    credsFor: (id) => `${id}:${runtimePasswordFor(secret, layout.eventPrefix, id)}`,
  };
}
