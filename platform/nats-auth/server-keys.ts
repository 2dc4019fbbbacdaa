import { mkdir, readFile, rm, writeFile } from "node:fs/promises";
import { readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ConnectionOptions, NatsConnection } from "@nats-io/transport-node";
import { connectNats } from "../nats-connect.ts";
import { credentialOf, type NatsKeys } from "./credentials.ts";

/**
 * Where a private server started on this machine keeps its keys, by URL, so the other processes of
 * a test run (vitest workers, spawned services) find them without every call passing them along.
 * Files are 0600 in a 0700 directory of the user's temp dir and removed when the server stops.
 * Deployments never use this: `make run` and the manifests hand each party its own NATS_CREDS.
 */
const dir = (): string => join(process.env.DROVER_NATS_KEYS_DIR ?? tmpdir(), "drover-nats-keys");
const fileOf = (url: string): string => join(dir(), `${url.replace(/[^a-z0-9]+/gi, "_")}.json`);

export async function rememberServerKeys(url: string, keys: NatsKeys): Promise<void> {
  await mkdir(dir(), { recursive: true, mode: 0o700 });
  await writeFile(fileOf(url), JSON.stringify(keys), { mode: 0o600 });
}

export async function forgetServerKeys(url: string): Promise<void> {
  await rm(fileOf(url), { force: true });
}

/** The keys of the private server at `url`, or undefined when it was not started here (or runs open). */
export function serverKeysOf(url: string): NatsKeys | undefined {
  try {
    return JSON.parse(readFileSync(fileOf(url), "utf8")) as NatsKeys;
  } catch {
    return undefined;
  }
}

export const readServerKeys = async (url: string): Promise<NatsKeys> =>
  JSON.parse(await readFile(fileOf(url), "utf8")) as NatsKeys;

/**
 * Connects to a private server started on this machine as its `harness` identity (every right: the
 * tests, benchmarks and the proof play every party), or without credentials to an open server.
 */
export function connectHarness(o: { servers: string } & Partial<ConnectionOptions>): Promise<NatsConnection> {
  const keys = serverKeysOf(o.servers);
  return connectNats({ ...o, creds: keys?.seeds.harness ? credentialOf(keys, "harness") : "" });
}

/** The harness NATS_CREDS of a private server started here ("" for an open server). */
export function harnessCredentialOf(url: string): string {
  const keys = serverKeysOf(url);
  return keys?.seeds.harness ? credentialOf(keys, "harness") : "";
}
