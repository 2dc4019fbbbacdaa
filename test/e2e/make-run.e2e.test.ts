import { spawn, type ChildProcess } from "node:child_process";
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { eventually } from "../support/streams.ts";

/**
 * `make run` (scripts/run.sh) for real: the real nats-server, FerretDB and Redis, every service as
 * a process and runtimes on process hosts, with state in a private DROVER_RUN_DIR /
 * DROVER_SERVICES_DIR and the API on a free port, so a developer's own `make run` is untouched.
 */
const ROOT = resolve(import.meta.dirname, "../..");
const TOKEN = "token-make-run-tenant-01";

type Run = {
  child: ChildProcess;
  out: () => string;
  exited: Promise<number | null>;
  env: NodeJS.ProcessEnv;
  dir: string;
};
const runs: Run[] = [];

async function makeRun(): Promise<Run> {
  const dir = await mkdtemp(join(tmpdir(), "drover-make-run-"));
  const config = join(dir, "drover.json");
  await writeFile(
    config,
    JSON.stringify({
      controlPlaneId: `cp-mr-${process.pid}`,
      api: { port: 0 },
      tenants: [
        {
          tenantId: "mr-acme",
          isolationMode: "dedicated",
          maxRuntimeInstances: 1,
          workersPerInstance: 1,
          maxConcurrentRunsPerInstance: 1,
          localQueueCapacity: 2,
        },
      ],
      tokens: { [TOKEN]: { role: "tenant", tenantId: "mr-acme" } },
    }),
  );
  const env = {
    ...process.env,
    DROVER_RUN_DIR: join(dir, "infra"),
    DROVER_SERVICES_DIR: join(dir, "services"),
    DROVER_CONFIG: config,
    NATS_PORT: "",
    MONGO_PORT: "",
    REDIS_PORT: "",
  };
  // detached: its own process group, as a terminal's foreground job is, so SIGINT to the group is Ctrl-C.
  const child = spawn("bash", [join(ROOT, "scripts/run.sh")], {
    env,
    detached: true,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  child.stdout!.on("data", (d: Buffer) => {
    out += d.toString();
  });
  child.stderr!.on("data", (d: Buffer) => {
    out += d.toString();
  });
  const exited = new Promise<number | null>((ok) => child.once("exit", (code) => ok(code)));
  const run = { child, out: () => out, exited, env, dir };
  runs.push(run);
  await eventually(
    "make run is up",
    async () => {
      if (child.exitCode !== null) throw new Error(`make run exited ${child.exitCode}:\n${out}`);
      return out.includes("running; Ctrl-C") ? true : undefined;
    },
    180_000,
  );
  return run;
}

/** Every process holding this run's NATS URL in its environment (services and runtimes), plus the recorded infra pids. */
async function leftovers(run: Run, infraPids: number[]): Promise<number[]> {
  const natsUrl = /NATS_URL=nats:\/\/127\.0\.0\.1:(\d+)/.exec(run.out())![0];
  const found: number[] = [];
  for (const pid of (await readdir("/proc")).filter((p) => /^\d+$/.test(p)).map(Number)) {
    const environ = await readFile(`/proc/${pid}/environ`, "utf8").catch(() => "");
    if (environ.split("\0").includes(natsUrl)) found.push(pid);
  }
  return [
    ...found,
    ...infraPids.filter((p) => {
      try {
        process.kill(p, 0);
        return true;
      } catch {
        return false;
      }
    }),
  ];
}

const infraPids = async (run: Run) =>
  Promise.all(
    ["nats", "ferretdb", "redis"].map(async (n) => Number(await readFile(join(run.dir, "infra", `${n}.pid`), "utf8"))),
  );

/** Runs the curl command `make run` printed, exactly as printed. */
function printedCurl(out: string): Promise<string> {
  const lines = out
    .split("\n")
    .filter((l) => /^\[drover\]\s+(curl |-d )/.test(l.trimStart()) || /^\[drover\] {3,}/.test(l));
  const cmd = lines.map((l) => l.replace(/^\[drover\]\s+/, "")).join("\n");
  expect(cmd).toMatch(/^curl .*\n.*\/v1\/runs$/s);
  return new Promise((ok, fail) => {
    const c = spawn("bash", ["-c", cmd], { stdio: ["ignore", "pipe", "inherit"] });
    let body = "";
    c.stdout.on("data", (d: Buffer) => {
      body += d.toString();
    });
    c.once("exit", (code) => (code === 0 ? ok(body) : fail(new Error(`curl exited ${code}`))));
  });
}

describe("make run (scripts/run.sh): real infrastructure, every service and process-host runtimes, stopped by Ctrl-C or make stop", () => {
  afterEach(async () => {
    for (const r of runs.splice(0)) {
      if (r.child.exitCode === null) {
        try {
          process.kill(-r.child.pid!, "SIGKILL");
        } catch {
          /* gone */
        }
      }
      await new Promise<void>((ok) => {
        const c = spawn("bash", [join(ROOT, "scripts/run.sh"), "--stop"], { env: r.env, stdio: "ignore" });
        c.once("exit", () => ok());
      });
      await rm(r.dir, { recursive: true, force: true });
    }
  });

  it("prints the API address and a curl that submits a run which completes; Ctrl-C (SIGINT to the group) stops every process it started", async () => {
    const run = await makeRun();
    const api = /API: +(http:\/\/127\.0\.0\.1:\d+\/v1)/.exec(run.out())?.[1];
    expect(api).toBeDefined();
    const submitted = JSON.parse(await printedCurl(run.out())) as { sharedRunId: string; tenantId: string };
    expect(submitted.tenantId).toBe("mr-acme");
    const view = await eventually(
      "the printed run completes",
      async () => {
        const r = await fetch(`${api}/runs/${submitted.sharedRunId}`, {
          headers: { authorization: `Bearer ${TOKEN}` },
        });
        const body = (await r.json()) as { status: string; placement: { runtimeInstanceId: string } | null };
        return body.status === "completed" ? body : undefined;
      },
      120_000,
    );
    expect(view.placement?.runtimeInstanceId).toMatch(/^rt-mr-acme-/);
    const infra = await infraPids(run);
    expect((await leftovers(run, infra)).length).toBeGreaterThanOrEqual(3 + 7 + 1); // infra, the seven services, the runtime

    process.kill(-run.child.pid!, "SIGINT");
    const code = await run.exited;
    // On a failure, its output names the step of the stop that failed (run.sh logs it).
    expect({ code, output: code === 0 ? "" : run.out().slice(-4000) }).toEqual({ code: 0, output: "" });
    expect(await leftovers(run, infra)).toEqual([]);
  });

  it("make stop never signals a process named by a stale pid file (pid reused by a stranger): no start time, or another one", async () => {
    const dir = await mkdtemp(join(tmpdir(), "drover-stale-pid-"));
    const services = join(dir, "services");
    await mkdir(services, { recursive: true });
    // Strangers in their own process groups, as a reused pid's owner would be.
    const strangers = [
      spawn("sleep", ["60"], { detached: true, stdio: "ignore" }),
      spawn("sleep", ["60"], { detached: true, stdio: "ignore" }),
    ];
    try {
      await writeFile(join(services, "admission.pid"), `${strangers[0]!.pid}\n`);
      await writeFile(join(services, "api.pid"), `${strangers[1]!.pid}\n`);
      await writeFile(join(services, "api.start"), "1\n");
      const env = { ...process.env, DROVER_RUN_DIR: join(dir, "infra"), DROVER_SERVICES_DIR: services };
      const stop = spawn("bash", [join(ROOT, "scripts/run.sh"), "--stop"], { env, stdio: "ignore" });
      expect(await new Promise((ok) => stop.once("exit", ok))).toBe(0);
      for (const s of strangers)
        expect(s.exitCode === null && s.signalCode === null, `pid ${s.pid} still running`).toBe(true);
      expect((await readdir(services)).filter((f) => f.endsWith(".pid"))).toEqual([]);
    } finally {
      for (const s of strangers) s.kill("SIGKILL");
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("returns by itself once make stop (run.sh --stop) from elsewhere has stopped everything, reporting each service once", async () => {
    const run = await makeRun();
    const infra = await infraPids(run);
    const stop = spawn("bash", [join(ROOT, "scripts/run.sh"), "--stop"], { env: run.env, stdio: "ignore" });
    expect(await new Promise((ok) => stop.once("exit", ok))).toBe(0);
    const code = await run.exited;
    // On a failure, its output names the step of the stop that failed (run.sh logs it).
    expect({ code, output: code === 0 ? "" : run.out().slice(-4000) }).toEqual({ code: 0, output: "" });
    expect(run.out()).toContain("stopped from elsewhere (make stop)");
    expect(run.out().match(/\[drover\] api exited/g)).toHaveLength(1);
    expect(run.out()).not.toMatch(/\[drover\] {2}exited/);
    expect(await leftovers(run, infra)).toEqual([]);
  });
});
