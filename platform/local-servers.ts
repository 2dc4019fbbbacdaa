import { spawn, type ChildProcess } from "node:child_process";
import { mkdtemp, rm, mkdir, writeFile } from "node:fs/promises";
import { connect } from "node:net";
import { freePortOnLoopback } from "../k8s/local-cluster/lib/free-port.ts";
import { listensOn } from "./hosts/listening-socket.ts";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { generateKeys, type NatsKeys } from "./nats-auth/credentials.ts";
import { forgetServerKeys, rememberServerKeys } from "./nats-auth/server-keys.ts";
import { serverConfig } from "./nats-auth/server-config.ts";
import { generateTls } from "./nats-auth/tls.ts";
import { scopeOf, TAGGED_SCOPE } from "./nats-auth/rights.ts";
import { DEFAULT_LAYOUT } from "../streams/index.ts";

/**
 * Launchers for private instances of the real servers, used by `drover proof` (when no
 * NATS_URL/REDIS_URL/MONGO_URL is given), the benchmarks and the int/host/e2e tiers: nats-server (JetStream),
 * FerretDB (SQLite backend, the MongoDB server) and Redis. Each starts on a free loopback port in a
 * private temp dir and is stopped (and its dir removed) by `stop()`; a process exit hook kills any
 * left over so a crashed test run leaves no server behind. Binaries come from `.tools/bin`
 * (`scripts/install-tools.sh`), or DROVER_TOOLS_DIR.
 */
export interface RunningServer {
  readonly name: string;
  /** nats-server only: the keys of every identity (authentication is on unless `auth: false`). */
  readonly keys?: NatsKeys;
  readonly port: number;
  readonly url: string;
  readonly pid: number;
  stop(): Promise<void>;
}

const ROOT = resolve(import.meta.dirname, "..");
export const toolsBin = (): string => process.env.DROVER_TOOLS_DIR ?? join(ROOT, ".tools/bin");

const live = new Set<ChildProcess>();
process.once("exit", () => {
  for (const c of live) c.kill("SIGKILL");
});

/** A currently unused loopback port (the same helper the local cluster uses). */
export const freePort = freePortOnLoopback;

function canConnect(port: number, host: string): Promise<boolean> {
  return new Promise((ok) => {
    const sock = connect({ host, port });
    sock.once("connect", () => {
      sock.destroy();
      ok(true);
    });
    sock.once("error", () => ok(false));
  });
}

export async function launch(
  name: string,
  cmd: string,
  args: string[],
  port: number,
  url: string,
  dir: string,
  host = "127.0.0.1",
  removeDir = true,
): Promise<RunningServer> {
  const child = spawn(cmd, args, { stdio: ["ignore", "ignore", "pipe"] });
  live.add(child);
  let stderr = "";
  child.stderr?.on("data", (d: Buffer) => {
    stderr = (stderr + d.toString()).slice(-4000);
  });
  const exited = new Promise<void>((ok) =>
    child.once("exit", () => {
      live.delete(child);
      ok();
    }),
  );
  // A start that fails leaves nothing behind: its directory goes as a stopped server's does (each
  // failed start used to leave a /tmp/drover-nats-* store behind).
  const failed = async (message: string): Promise<never> => {
    if (removeDir) await rm(dir, { recursive: true, force: true });
    throw new Error(message);
  };
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null)
      return failed(`${name} exited during start-up: ${stderr}`);
    // Connectable is not enough: another process (a server started at the same time on the same
    // "free" port) may be the one listening. Only this child's own listening socket counts.
    if ((await canConnect(port, host)) && listensOn(child.pid ?? -1, port)) break;
    if (Date.now() > deadline) {
      child.kill("SIGKILL");
      await exited;
      return failed(`${name} did not listen on ${port} within 30s: ${stderr}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    name,
    port,
    url,
    pid: child.pid ?? -1,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill("SIGTERM");
        const timer = setTimeout(() => child.kill("SIGKILL"), 5_000);
        await exited;
        clearTimeout(timer);
      }
      if (removeDir) await rm(dir, { recursive: true, force: true });
    },
  };
}

/**
 * Starts a private nats-server with JetStream (file store in a temp dir), with authentication on:
 * fresh keys for every identity (nats-auth/), rights over the default and every tagged layout, and
 * a `harness` identity with every right for the tests themselves. The keys are returned and kept,
 * by URL, where test processes find them (server-keys.ts). `auth: false` starts it open (only for
 * a server too old to have auth callout). `binary: "nats-server-debian"`
 * runs Debian's 2.9.10 instead (older than drover supports; install-tools.sh extracts it). `host`
 * (default 127.0.0.1) is where it listens: a real local-cluster node's address for Pods to reach it.
 */
export async function startNats(
  opts: {
    port?: number;
    host?: string;
    extraArgs?: string[];
    binary?: "nats-server" | "nats-server-debian";
    /** The JetStream store directory, owned by the caller (kept at stop): a restart on the same data. */
    storeDir?: string;
    /** Keys of an earlier start on the same store (a restart keeps everyone's credentials). */
    keys?: NatsKeys;
    auth?: boolean;
    /** TLS only (a CA and a server certificate generated into the store directory; `caFile` in the result). */
    tls?: boolean;
  } = {},
): Promise<RunningServer & { caFile?: string }> {
  const dir = opts.storeDir ?? (await mkdtemp(join(tmpdir(), "drover-nats-")));
  const host = opts.host ?? "127.0.0.1";
  const port = opts.port ?? (await freePort());
  const url = `nats://${host}:${port}`;
  const bin = join(toolsBin(), opts.binary ?? "nats-server");
  if (opts.auth === false)
    return launch(
      "nats-server",
      bin,
      ["-a", host, "-p", String(port), "-js", "-sd", dir, ...(opts.extraArgs ?? [])],
      port,
      url,
      dir,
      host,
      opts.storeDir === undefined,
    );
  // Two trusted producers (tenants `acme` and `globex`) let tests prove tenant-limited submission.
  const keys = opts.keys ?? generateKeys({ harness: true, producers: ["acme", "globex"] });
  const conf = join(dir, `auth-${port}.conf`);
  const tls = opts.tls ? await generateTls(join(dir, "tls"), [host, "localhost"]) : undefined;
  await writeFile(
    conf,
    serverConfig({
      host,
      port,
      storeDir: dir,
      keys,
      scopes: [scopeOf(DEFAULT_LAYOUT), TAGGED_SCOPE],
      ...(tls ? { tls } : {}),
    }),
    { mode: 0o600 },
  );
  await rememberServerKeys(url, keys);
  const server = await launch(
    "nats-server",
    bin,
    ["-c", conf, ...(opts.extraArgs ?? [])],
    port,
    url,
    dir,
    host,
    opts.storeDir === undefined,
  );
  return {
    ...server,
    keys,
    ...(tls ? { caFile: tls.caFile } : {}),
    async stop() {
      await server.stop();
      await forgetServerKeys(url);
    },
  };
}

/**
 * Starts a private FerretDB v1 with the SQLite backend; the url is a mongodb:// connection string.
 * `synchronous(normal)` (WAL): a commit is not fsynced, only checkpoints are. FerretDB commits every
 * write on its own, and the fsyncs were a tenth of its CPU in W2 (bench/workloads). A power loss may
 * roll back the last commits, never reorder them: the WAL replays a prefix, so the projector's
 * checkpoint (saved after the data) never claims a write that is lost, and the read models are
 * rebuilt from JetStream anyway (docs/decisions.md).
 */
export async function startFerret(): Promise<RunningServer> {
  const dir = await mkdtemp(join(tmpdir(), "drover-ferret-"));
  await mkdir(join(dir, "data"));
  const port = await freePort();
  return launch(
    "ferretdb",
    join(toolsBin(), "ferretdb"),
    [
      "--handler=sqlite",
      `--sqlite-url=file:${dir}/data/?_pragma=synchronous(normal)`,
      `--listen-addr=127.0.0.1:${port}`,
      `--state-dir=${dir}`,
      "--debug-addr=-",
      "--telemetry=disable",
      "--log-level=error",
    ],
    port,
    `mongodb://127.0.0.1:${port}/?directConnection=true&retryWrites=false`,
    dir,
  );
}

/** Starts a private Redis with no persistence. */
export async function startRedis(): Promise<RunningServer> {
  const dir = await mkdtemp(join(tmpdir(), "drover-redis-"));
  const port = await freePort();
  return launch(
    "redis-server",
    "redis-server",
    ["--bind", "127.0.0.1", "--port", String(port), "--save", "", "--appendonly", "no", "--dir", dir],
    port,
    `redis://127.0.0.1:${port}`,
    dir,
  );
}
