import { createHmac } from "node:crypto";

/**
 * Per-instance runtime command tokens, derived rather than stored: token = HMAC-SHA256(secret,
 * RuntimeInstanceId). The provisioner hands each runtime its own token at host start (env or a
 * Kubernetes Secret); admission, recovery and the provisioner's readiness probe derive the same
 * token from the control plane's secret, so no token is ever written to an event, Redis or MongoDB,
 * and a token of one runtime is useless against another.
 */
export function commandTokenFor(secret: string, runtimeInstanceId: string): string {
  return createHmac("sha256", secret).update(`drover-runtime-command:${runtimeInstanceId}`).digest("hex");
}

/** Development default, used only when DROVER_COMMAND_SECRET is unset (make run, tests); production must set it. */
export const DEV_COMMAND_SECRET = "drover-dev-command-secret-not-for-production";

/** The control plane's command secret from DROVER_COMMAND_SECRET, or the development default. */
export function commandSecretFromEnv(): { secret: string; isDefault: boolean } {
  const s = process.env.DROVER_COMMAND_SECRET;
  return s ? { secret: s, isDefault: false } : { secret: DEV_COMMAND_SECRET, isDefault: true };
}
