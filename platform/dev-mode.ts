/**
 * The explicit development flag, `DROVER_DEV=1` (set by `make run` and the test support, each
 * saying so). Without it the control plane refuses development shortcuts: a missing or placeholder
 * command secret, plaintext tenant tokens (docs/security.md "Secrets and tokens").
 */
export function isDevMode(env: Readonly<Record<string, string | undefined>> = process.env): boolean {
  return env.DROVER_DEV === "1";
}
