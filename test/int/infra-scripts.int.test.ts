import { spawn, type ChildProcess } from "node:child_process";
import { mkdtemp, readFile, readdir, readlink, rm, writeFile } from "node:fs/promises";
import { existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { jetstreamManager } from "@nats-io/jetstream";
import { freePort } from "../../platform/local-servers.ts";
import { credentialOf, type NatsKeys } from "../../platform/nats-auth/credentials.ts";
import { connectNats } from "../../platform/nats-connect.ts";

/**
 * `make infra-up` / `make infra-down` (scripts/infra-up.sh, infra-down.sh) starting and stopping the
 * real nats-server, FerretDB and Redis processes, each test in a private DROVER_RUN_DIR so the
 * developer's own `.run/infra` is never touched.
 */
const ROOT = resolve(import.meta.dirname, "../..");
const SERVERS = ["nats", "ferretdb", "redis"] as const;

function sh(script: string, env: Record<string, string>): Promise<{ code: number; out: string }> {
  return new Promise((ok, fail) => {
    const child = spawn("bash", [join(ROOT, "scripts", script)], {
      env: { ...process.env, ...env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    child.stdout.on("data", (d: Buffer) => {
      out += d.toString();
    });
    child.stderr.on("data", (d: Buffer) => {
      out += d.toString();
    });
    child.once("error", fail);
    child.once("exit", (code) => ok({ code: code ?? -1, out }));
  });
}

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};
const pidOf = async (dir: string, name: string) => Number((await readFile(join(dir, `${name}.pid`), "utf8")).trim());

/** Every TCP address (hex `ADDR:PORT` from /proc/net/tcp{,6}) on which `pid` listens. */
async function listening(pid: number): Promise<string[]> {
  const inodes = new Set<string>();
  for (const fd of await readdir(`/proc/${pid}/fd`)) {
    const link = await readlink(`/proc/${pid}/fd/${fd}`).catch(() => "");
    const m = /^socket:\[(\d+)\]$/.exec(link);
    if (m) inodes.add(m[1]!);
  }
  const out: string[] = [];
  for (const table of ["/proc/net/tcp", "/proc/net/tcp6"]) {
    for (const row of (await readFile(table, "utf8")).split("\n").slice(1)) {
      const f = row.trim().split(/\s+/);
      if (f[3] === "0A" && inodes.has(f[9]!)) out.push(f[1]!); // 0A = LISTEN
    }
  }
  return out;
}
const LOOPBACK = "0100007F"; // 127.0.0.1 as /proc/net/tcp writes it

describe("infra-up / infra-down scripts starting and stopping real nats-server, FerretDB and Redis processes", () => {
  const dirs: string[] = [];
  const strangers: ChildProcess[] = [];
  afterEach(async () => {
    for (const d of dirs.splice(0)) {
      await sh("infra-down.sh", { DROVER_RUN_DIR: d });
      await rm(d, { recursive: true, force: true });
    }
    for (const s of strangers.splice(0)) s.kill("SIGKILL");
  });
  const runDir = async () => {
    const d = await mkdtemp(join(tmpdir(), "drover-infra-"));
    dirs.push(d);
    return d;
  };

  it("starts all three on loopback only, honours a configured port, adopts them on a second run, and infra-down leaves nothing running", async () => {
    const dir = await runDir();
    const natsPort = await freePort();
    const env = { DROVER_RUN_DIR: dir, NATS_PORT: String(natsPort), MONGO_PORT: "", REDIS_PORT: "" };
    const first = await sh("infra-up.sh", env);
    expect(first.code, first.out).toBe(0);
    const pids = await Promise.all(SERVERS.map((n) => pidOf(dir, n)));
    const envFile = await readFile(join(dir, "env"), "utf8");
    expect(envFile).toContain(`NATS_URL='nats://127.0.0.1:${natsPort}'`);
    for (const [i, name] of SERVERS.entries()) {
      expect(alive(pids[i]!), name).toBe(true);
      const port = Number((await readFile(join(dir, `${name}.port`), "utf8")).trim());
      // exactly the one advertised port, on 127.0.0.1 (no monitoring, debug or wildcard listener)
      expect(await listening(pids[i]!), name).toEqual([
        `${LOOPBACK}:${port.toString(16).toUpperCase().padStart(4, "0")}`,
      ]);
    }

    const second = await sh("infra-up.sh", env);
    expect(second.code, second.out).toBe(0);
    for (const name of SERVERS) expect(second.out).toContain(`${name} already running`);
    expect(await Promise.all(SERVERS.map((n) => pidOf(dir, n)))).toEqual(pids);
    expect(await readFile(join(dir, "env"), "utf8")).toBe(envFile);

    // A configured port that is taken is refused, and nothing is started in that run dir.
    const other = await runDir();
    const clash = await sh("infra-up.sh", { DROVER_RUN_DIR: other, NATS_PORT: String(natsPort) });
    expect(clash.code).not.toBe(0);
    expect(clash.out).toContain(`NATS_PORT=${natsPort} is taken`);
    expect(SERVERS.filter((n) => existsSync(join(other, `${n}.pid`)))).toEqual([]);

    const down = await sh("infra-down.sh", { DROVER_RUN_DIR: dir });
    expect(down.code, down.out).toBe(0);
    expect(pids.filter(alive)).toEqual([]);
    expect(SERVERS.filter((n) => existsSync(join(dir, `${n}.pid`)))).toEqual([]);
  });

  it("never adopts or signals a live process named by a stale pid file (pid reused after a crash or reboot)", async () => {
    const dir = await runDir();
    const stranger = spawn("sleep", ["300"], { stdio: "ignore" });
    strangers.push(stranger);
    const stale = async (name: string, withStart: boolean) => {
      await writeFile(join(dir, `${name}.pid`), `${stranger.pid}\n`);
      await writeFile(join(dir, `${name}.port`), `${await freePort()}\n`);
      if (withStart) await writeFile(join(dir, `${name}.start`), "1\n"); // the start time of the process that died
    };
    await stale("nats", true);
    await stale("redis", false); // a pid file from before start times were recorded

    const down = await sh("infra-down.sh", { DROVER_RUN_DIR: dir });
    expect(down.code, down.out).toBe(0);
    expect(alive(stranger.pid!)).toBe(true);
    expect(down.out).toContain(`nats: pid ${stranger.pid} is alive but is not the process infra-up started`);
    expect(down.out).toContain(`redis: pid ${stranger.pid} is alive but is not the process infra-up started`);

    await stale("nats", true);
    const up = await sh("infra-up.sh", { DROVER_RUN_DIR: dir, NATS_PORT: "", MONGO_PORT: "", REDIS_PORT: "" });
    expect(up.code, up.out).toBe(0);
    expect(up.out).not.toContain("nats already running");
    const nats = await pidOf(dir, "nats");
    expect(nats).not.toBe(stranger.pid);
    expect(alive(nats)).toBe(true);
    await sh("infra-down.sh", { DROVER_RUN_DIR: dir });
    expect(alive(nats)).toBe(false);
    expect(alive(stranger.pid!)).toBe(true);
  });

  it("NATS_CLUSTER=3 starts a 3-node JetStream cluster on loopback, lists every seed in NATS_URL, and setup makes R3 streams", async () => {
    const dir = await runDir();
    const up = await sh("infra-up.sh", {
      DROVER_RUN_DIR: dir,
      NATS_CLUSTER: "3",
      NATS_PORT: "",
      MONGO_PORT: "",
      REDIS_PORT: "",
    });
    expect(up.code, up.out).toBe(0);
    const nodes = ["nats-1", "nats-2", "nats-3"];
    const pids = await Promise.all(nodes.map((n) => pidOf(dir, n)));
    const ports = await Promise.all(
      nodes.map(async (n) => Number((await readFile(join(dir, `${n}.port`), "utf8")).trim())),
    );
    const envFile = await readFile(join(dir, "env"), "utf8");
    expect(envFile).toContain(`NATS_URL='${ports.map((p) => `nats://127.0.0.1:${p}`).join(",")}'`);
    expect(envFile).toContain("NATS_REPLICAS=3");
    for (const pid of pids) {
      // the client port and the route port, both on 127.0.0.1 only
      const addrs = await listening(pid);
      expect(addrs).toHaveLength(2);
      for (const a of addrs) expect(a.startsWith(`${LOOPBACK}:`), a).toBe(true);
    }
    // The setup identity creates every stream with 3 replicas (NATS_REPLICAS from the env file).
    const env = Object.fromEntries(
      envFile
        .split("\n")
        .filter((l) => l.includes("="))
        .map((l) => [l.slice(0, l.indexOf("=")), l.slice(l.indexOf("=") + 1).replace(/^'|'$/g, "")]),
    ) as Record<string, string>;
    const setup = await new Promise<{ code: number; out: string }>((ok) => {
      const child = spawn("node", ["--import", "tsx", "scripts/nats-auth.ts", "setup", join(dir, "nats-auth")], {
        cwd: ROOT,
        env: { ...process.env, ...env },
        stdio: ["ignore", "pipe", "pipe"],
      });
      let out = "";
      child.stderr.on("data", (d: Buffer) => (out += d.toString()));
      child.once("exit", (code) => ok({ code: code ?? -1, out }));
    });
    expect(setup.code, setup.out).toBe(0);
    const keys = JSON.parse(await readFile(join(dir, "nats-auth", "keys.json"), "utf8")) as NatsKeys;
    const nc = await connectNats({ servers: env.NATS_URL!, creds: credentialOf(keys, "setup") });
    const jsm = await jetstreamManager(nc);
    const replicas: Record<string, number> = {};
    for await (const si of jsm.streams.list()) replicas[si.config.name] = si.config.num_replicas;
    await nc.close();
    expect(replicas).toEqual({
      DROVER: 3,
      DROVER_ARCHIVE: 3,
      DROVER_DLQ: 3,
      DROVER_LEASES: 3,
      DROVER_OUTPUTS: 3,
      DROVER_SNAPSHOTS: 3,
      DROVER_STEP_CACHE: 3,
      HEARTBEATS: 3,
    });

    const down = await sh("infra-down.sh", { DROVER_RUN_DIR: dir });
    expect(down.code, down.out).toBe(0);
    expect(pids.filter(alive)).toEqual([]);
  }, 120_000);
});
