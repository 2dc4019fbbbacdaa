import { existsSync, rmSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";

const ROOT = resolve(import.meta.dirname, "../../..");

/**
 * Where to record the listening port for scripts/run.sh: DROVER_SERVICES_DIR (default
 * .run/services), only if that directory exists, so a bare `tsx main.ts` leaves no file behind.
 */
export function portFileIn(env: NodeJS.ProcessEnv): string | undefined {
  const servicesDir = env.DROVER_SERVICES_DIR ?? join(ROOT, ".run/services");
  return existsSync(servicesDir) ? join(servicesDir, "api.port") : undefined;
}

/** Writes the port for scripts/run.sh, which prints the API and dashboard URLs from it. */
export function writePortFile(path: string | undefined, port: number): void {
  if (path !== undefined) writeFileSync(path, `${port}\n`);
}

/** Removes the port file on a clean stop, so nothing points at a port that no longer listens. */
export function removePortFile(path: string | undefined): void {
  if (path !== undefined) rmSync(path, { force: true });
}
