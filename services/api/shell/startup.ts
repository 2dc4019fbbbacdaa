import { existsSync, rmSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { ID_PATTERN } from "../../../contracts/index.ts";
import { DEFAULT_LAYOUT, taggedLayout, type StreamLayout } from "../../../streams/layout.ts";

const ROOT = resolve(import.meta.dirname, "../../..");

/** The environment the API reads at start-up, with its defaults. */
export interface ApiEnv {
  readonly configPath: string;
  readonly natsUrl: string;
  readonly layout: StreamLayout;
  /** The forensics read models' MongoDB, when configured (MONGO_URL); without it those queries answer 503. */
  readonly mongoUrl: string | undefined;
  /** Where to record the listening port for scripts/run.sh, when that directory exists. */
  readonly portFile: string | undefined;
}

/**
 * DROVER_CONFIG (default config/drover.local.json), NATS_URL (default nats://127.0.0.1:4222),
 * DROVER_STREAM_TAG (a tagged stream layout, for isolated runs), DROVER_SERVICES_DIR (default
 * .run/services: the port file goes there only if it exists, so a bare `tsx main.ts` leaves no
 * file behind), MONGO_URL (optional: the forensics read models). Throws when DROVER_STREAM_TAG is not a lowercase id.
 */
export function readEnv(env: NodeJS.ProcessEnv): ApiEnv {
  const tag = env.DROVER_STREAM_TAG;
  if (tag !== undefined && !ID_PATTERN.test(tag))
    throw new Error(`DROVER_STREAM_TAG ${JSON.stringify(tag)} is not lowercase [a-z0-9-]`);
  const servicesDir = env.DROVER_SERVICES_DIR ?? join(ROOT, ".run/services");
  return {
    configPath: env.DROVER_CONFIG ?? join(ROOT, "config/drover.local.json"),
    natsUrl: env.NATS_URL ?? "nats://127.0.0.1:4222",
    layout: tag ? taggedLayout(tag) : DEFAULT_LAYOUT,
    mongoUrl: env.MONGO_URL || undefined,
    portFile: existsSync(servicesDir) ? join(servicesDir, "api.port") : undefined,
  };
}

/** Writes the port for scripts/run.sh, which prints the API and dashboard URLs from it. */
export function writePortFile(path: string | undefined, port: number): void {
  if (path !== undefined) writeFileSync(path, `${port}\n`);
}

/** Removes the port file on a clean stop, so nothing points at a port that no longer listens. */
export function removePortFile(path: string | undefined): void {
  if (path !== undefined) rmSync(path, { force: true });
}
