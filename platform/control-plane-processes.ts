import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { createWriteStream, readFileSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import type { z } from "zod";
import type { DroverConfig } from "../contracts/index.ts";
import { jetstreamManager } from "@nats-io/jetstream";
import { taggedLayout, type StreamLayout } from "../streams/index.ts";
import { credentialOf } from "./nats-auth/credentials.ts";
import { serverKeysOf } from "./nats-auth/server-keys.ts";
import { connectNats } from "./nats-connect.ts";
import { setupNats } from "./nats-setup.ts";
import { killProcessesLoggingUnder } from "./hosts/orphan-runtimes.ts";
import { cpuProfFlags, nodeFlags } from "./node-flags.ts";
import { serviceCommand } from "./service-bundle.ts";

const ROOT = resolve(import.meta.dirname, "..");
export const SERVICES = ["capacity", "recovery", "provisioner", "admission", "scheduler", "api"] as const;
export type ServiceName = (typeof SERVICES)[number] | "forensics";

/**
 * The whole control plane as real processes (`node --import tsx services/<name>/main.ts`, each
 * its own process so it can be killed alone), on a private stream layout and Redis database, with
 * a generated config. For e2e and proof tests: every process is stopped by `stop()` (and killed at
 * exit if a test forgot), the provisioner's runtimes with it.
 */
export interface ControlPlane {
  readonly apiUrl: string;
  readonly layout: StreamLayout;
  readonly streamTag: string;
  readonly env: Readonly<Record<string, string>>;
  readonly logDir: string;
  /** SIGKILLs one replica of a service (a crash, replica 0 unless named); `restart` starts it again. */
  kill(service: ServiceName, replica?: number): Promise<void>;
  restart(service: ServiceName, replica?: number): Promise<void>;
  /** How many replicas of the service this plane runs. */
  replicasOf(service: ServiceName): number;
  /** Stops every service; the log directory is removed unless `keepLogs` (or DROVER_KEEP_LOGS) is set. */
  stop(keepLogs?: boolean): Promise<void>;
}

export interface ControlPlaneOptions {
  readonly natsUrl: string;
  readonly redisUrl: string;
  readonly mongoUrl?: string;
  readonly config: z.input<typeof DroverConfig>;
  readonly services?: readonly ServiceName[];
  /**
   * Replicas per service (default 1): each its own process with its own instance id and log
   * (`<name>.log`, `<name>-1.log`, …); `apiUrl` is replica 0's listener.
   */
  readonly replicas?: Partial<Record<ServiceName, number>>;
  /**
   * Start on the data of an earlier control plane (its `streamTag` and `logDir`, stopped with
   * `stop(true)`): the same stream layout, config and runtime log directory, as a whole-stack restart.
   */
  readonly resume?: { readonly streamTag: string; readonly logDir: string };
}

/**
 * A profiled stop's runtimes (DROVER_CPU_PROF_DIR): SIGTERMed once every service but the provisioner has
 * stopped, and awaited (≤ 10 s). A runtime writes its profile as it exits after its drain; the provisioner's
 * stop SIGKILLs it (no profile), and so did recovery, while it ran, until it took a runtime's own idle
 * draining beat for a stop (docs/control-flow.md "Stopping a runtime"): the drain closes the runtime's NATS
 * connection and its command endpoint, which recovery took for a lost connection and fenced (a SIGKILL
 * ~20 ms after `drained`, while the exiting process still serialised its profile).
 */
async function drainRuntimes(logDir: string): Promise<void> {
  const pids = killProcessesLoggingUnder(logDir, "SIGTERM");
  const exited = (pid: number) => {
    try {
      return /\) Z /.test(readFileSync(`/proc/${pid}/stat`, "utf8"));
    } catch {
      return true;
    }
  };
  for (const until = Date.now() + 10_000; Date.now() < until && !pids.every(exited);)
    await new Promise((r) => setTimeout(r, 50));
}

const live = new Set<ChildProcess>();
process.once("exit", () => {
  for (const c of live) c.kill("SIGKILL");
});
const planes = new Set<ControlPlane>();

/**
 * Stops every control plane this process started and has not stopped (SIGTERM, so each
 * provisioner takes its runtimes down): for an interrupted caller (`drover proof` on Ctrl-C),
 * where the exit hook's SIGKILL would leave the provisioners' detached runtimes behind.
 */
export async function stopAllControlPlanes(): Promise<void> {
  for (const p of [...planes]) await p.stop();
}

/**
 * The configuration the processes read: the caller's, with the API on a free loopback port. The
 * caller's other API settings (rate limit, feed cap) are kept: replacing the whole `api` object
 * once silently put the flood tests back on the default 6 000 requests a minute, and their 429s
 * were taken for the queue cap.
 */
export const processConfig = (config: ControlPlaneOptions["config"]): ControlPlaneOptions["config"] => ({
  ...config,
  api: { ...config.api, host: "127.0.0.1", port: 0 },
});

export async function startControlPlane(o: ControlPlaneOptions): Promise<ControlPlane> {
  const streamTag = o.resume?.streamTag ?? `e2e-${randomBytes(5).toString("hex")}`;
  const dir = o.resume?.logDir ?? (await mkdtemp(join(tmpdir(), "drover-cp-")));
  const configPath = join(dir, "drover.json");
  await writeFile(configPath, JSON.stringify(processConfig(o.config)));
  const env: Record<string, string> = {
    ...(process.env as Record<string, string>),
    NATS_URL: o.natsUrl,
    REDIS_URL: o.redisUrl,
    DROVER_CONFIG: configPath,
    DROVER_STREAM_TAG: streamTag,
    DROVER_SERVICES_DIR: dir,
    DROVER_RUNTIME_LOG_DIR: join(dir, "runtimes"),
    LOG_LEVEL: "info",
    DROVER_SCALEOUT_ACK_WAIT_MS: "5000",
    // Development mode, explicitly: the development command secret and the plaintext test tokens
    // are accepted (each service logs a warning); production refuses both (docs/security.md).
    DROVER_DEV: "1",
    ...(o.mongoUrl ? { MONGO_URL: o.mongoUrl } : {}),
  };
  // Authentication: each service connects as its own identity (the server's keys, server-keys.ts);
  // the streams, the durable consumer and the outputs stream are made by the setup identity first.
  const keys = serverKeysOf(o.natsUrl);
  const credsOf = (name: ServiceName): Record<string, string> =>
    keys
      ? {
          NATS_CREDS: credentialOf(keys, name),
          ...(name === "provisioner" ? { DROVER_NATS_CALLOUT_SEED: keys.calloutSeed } : {}),
          ...(name === "recovery" && keys.seeds.kicker ? { DROVER_NATS_KICK_CREDS: credentialOf(keys, "kicker") } : {}),
        }
      : {};
  const setup = await connectNats({ servers: o.natsUrl, creds: keys ? credentialOf(keys, "setup") : "" });
  try {
    await setupNats(await jetstreamManager(setup), taggedLayout(streamTag), Number(env.DROVER_SCALEOUT_ACK_WAIT_MS));
  } finally {
    await setup.close();
  }
  const procs = new Map<string, ChildProcess>();
  let apiUrl = "";
  const replicasOf = (name: ServiceName) => Math.max(1, o.replicas?.[name] ?? 1);
  const keyOf = (name: ServiceName, replica: number) => (replica === 0 ? name : `${name}-${replica}`);

  const warn = (name: string) => (why: string) => console.warn(`[drover] ${name} starts from source: ${why}`);
  const start = async (name: ServiceName, replica = 0): Promise<void> => {
    // DROVER_CPU_PROF_DIR: where a benchmark's CPU goes (platform/node-flags.ts cpuProfFlags).
    const command = [...nodeFlags(name), ...cpuProfFlags(name), ...(await serviceCommand(name, warn(name)))];
    // DROVER_API_NICE (0–19, measurements only: docs/security.md "Floods"): the API, which serves a
    // flood's submissions, at a lower CPU priority than the control path. Off by default (not adopted).
    const nice = name === "api" ? Number(process.env.DROVER_API_NICE ?? 0) : 0;
    // `nice` execs node: the same pid, and every thread node starts inherits the priority.
    const [file, args]: [string, string[]] =
      nice > 0 ? ["nice", ["-n", String(nice), process.execPath, ...command]] : [process.execPath, command];
    const child = spawn(file, args, {
      cwd: ROOT,
      env: { ...env, ...credsOf(name) },
      stdio: ["ignore", "pipe", "pipe"],
    });
    live.add(child);
    child.once("exit", () => live.delete(child));
    const log = createWriteStream(join(dir, `${keyOf(name, replica)}.log`), { flags: "a" });
    child.stderr!.pipe(log);
    procs.set(keyOf(name, replica), child);
    if (name !== "api" || replica > 0) {
      child.stdout!.pipe(log);
      return;
    }
    apiUrl = await new Promise<string>((ok, fail) => {
      let buf = "";
      const timer = setTimeout(() => fail(new Error(`api did not listen within 120s; see ${dir}/api.log`)), 120_000);
      child.once("exit", (code) => fail(new Error(`api exited (${code}) during start-up; see ${dir}/api.log`)));
      child.stdout!.on("data", (d: Buffer) => {
        buf += d.toString();
        const m = /"port":(\d+)/.exec(buf);
        if (m) {
          clearTimeout(timer);
          ok(`http://127.0.0.1:${m[1]}`);
        }
      });
    });
  };
  const stopOne = async (key: string, signal: NodeJS.Signals) => {
    const c = procs.get(key);
    if (!c || c.exitCode !== null || c.signalCode !== null) return;
    const exited = new Promise((r) => c.once("exit", r));
    c.kill(signal);
    const t = setTimeout(() => c.kill("SIGKILL"), 10_000);
    await exited;
    clearTimeout(t);
  };

  // Bundle every service at once (esbuild works in its own process), then spawn them in order.
  await Promise.all((o.services ?? SERVICES).map((s) => serviceCommand(s, warn(s))));
  try {
    for (const s of o.services ?? SERVICES) for (let r = 0; r < replicasOf(s); r++) await start(s, r);
  } catch (e) {
    // A service that failed to start: none of those already started may outlive this call.
    for (const s of procs.keys()) await stopOne(s, "SIGKILL");
    throw e;
  }
  const plane: ControlPlane = {
    get apiUrl() {
      return apiUrl;
    },
    layout: taggedLayout(streamTag),
    streamTag,
    env,
    logDir: dir,
    kill: (s, r = 0) => stopOne(keyOf(s, r), "SIGKILL"),
    restart: (s, r = 0) => start(s, r),
    replicasOf,
    async stop(keepLogs = false) {
      planes.delete(plane);
      // api first (no new work), provisioner last (it takes its runtimes down with it)
      for (const s of [
        "api",
        "scheduler",
        "admission",
        "recovery",
        "capacity",
        "forensics",
        "provisioner",
      ] as ServiceName[]) {
        if (s === "provisioner" && cpuProfFlags("runtime").length > 0) await drainRuntimes(join(dir, "runtimes"));
        await Promise.all(Array.from({ length: replicasOf(s) }, (_, r) => stopOne(keyOf(s, r), "SIGTERM")));
      }
      // Runtimes whose provisioner replica was SIGKILLed (chaos) have nobody left to stop them.
      const orphans = killProcessesLoggingUnder(join(dir, "runtimes"));
      if (orphans.length > 0) console.warn(`control plane ${streamTag}: killed ${orphans.length} orphaned runtime(s)`);
      if (!keepLogs && !process.env.DROVER_KEEP_LOGS) await rm(dir, { recursive: true, force: true });
    },
  };
  planes.add(plane);
  return plane;
}
