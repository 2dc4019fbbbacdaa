import { createHmac } from "node:crypto";
import { isDevMode } from "./dev-mode.ts";

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

/** Development default, used only with DROVER_DEV=1 when DROVER_COMMAND_SECRET is unset (make run, tests). */
export const DEV_COMMAND_SECRET = "drover-dev-command-secret-not-for-production";

export const MIN_COMMAND_SECRET_LENGTH = 32;

/** Why a configured secret is not a real one, or undefined when it is. */
export function weakCommandSecret(s: string | undefined): string | undefined {
  if (s === undefined || s === "") return "is not set";
  if (/change-?me|placeholder|example|not-for-production|replace|secret-here/i.test(s)) return "is a placeholder";
  if (s.length < MIN_COMMAND_SECRET_LENGTH) return `is shorter than ${MIN_COMMAND_SECRET_LENGTH} characters`;
  if (new Set(s).size < 8) return "has fewer than 8 distinct characters";
  return undefined;
}

/**
 * The control plane's command secret from DROVER_COMMAND_SECRET. An unset, placeholder or short
 * secret throws (the service refuses to start with this message) unless DROVER_DEV=1, which uses
 * the development default (or the weak value given) and reports `isDefault` so the caller warns.
 */
export function commandSecretFromEnv(env: Readonly<Record<string, string | undefined>> = process.env): {
  secret: string;
  isDefault: boolean;
} {
  const s = env.DROVER_COMMAND_SECRET;
  const weak = weakCommandSecret(s);
  if (weak === undefined) return { secret: s as string, isDefault: false };
  if (isDevMode(env)) return { secret: s || DEV_COMMAND_SECRET, isDefault: true };
  throw new Error(
    `DROVER_COMMAND_SECRET ${weak}: set it to the same random value (at least ${MIN_COMMAND_SECRET_LENGTH} characters, e.g. \`openssl rand -hex 32\`) in every control-plane service, or set DROVER_DEV=1 for a development run (never in production)`,
  );
}
