import { spawn, type ChildProcess } from "node:child_process";
import { harnessCredentialOf } from "../../platform/nats-auth/server-keys.ts";
import { randomBytes } from "node:crypto";
import { resolve } from "node:path";
import type { RuntimeCommand, RuntimeCommandResult, RuntimeSizing, Transport } from "../../contracts/index.ts";
import { sendCommand } from "../../platform/runtime-client.ts";

/**
 * Starts a REAL runtime instance process (`node --import tsx services/runtime/main.ts`) for host/e2e/proof tests,
 * waits for its `listening` line, and gives the test handles to command it, read its log lines,
 * pause (SIGSTOP), continue (SIGCONT), kill (SIGKILL) and stop (SIGTERM drain) it. Every process is
 * killed at exit if a test forgot it.
 */
export interface RuntimeProcessOptions {
  readonly natsUrl: string;
  readonly streamTag: string;
  readonly runtimeInstanceId: string;
  readonly transport: Transport;
  readonly tenantId?: string;
  readonly controlPlaneId?: string;
  readonly sizing?: Partial<RuntimeSizing>;
  readonly token?: string;
  readonly heartbeatMs?: number;
  readonly llmBaseUrl?: string;
  /** DROVER_EGRESS: egress settings by TenantId (loopback test servers must be allowed here). */
  readonly egress?: Readonly<Record<string, { allow?: readonly string[]; maxResponseBytes?: number }>>;
  readonly env?: Readonly<Record<string, string>>;
  readonly startTimeoutMs?: number;
}

export interface RuntimeProcess {
  readonly runtimeInstanceId: string;
  readonly transport: Transport;
  readonly pid: number;
  readonly port: number;
  /** `127.0.0.1:<port>` (the client adds the scheme per transport). */
  readonly endpoint: string;
  readonly token: string;
  readonly hostIncarnation: string;
  /** Every JSON line the process printed on stdout, in order. */
  readonly lines: readonly Record<string, unknown>[];
  stderr(): string;
  /** Waits (with a deadline, never a fixed sleep) for a stdout line matching `pred`. */
  waitForLine(pred: (l: Record<string, unknown>) => boolean, timeoutMs?: number): Promise<Record<string, unknown>>;
  /** Sends a command to this runtime (target id, routing header and token filled in). */
  send<C extends RuntimeCommand>(
    command: Omit<C, "runtimeInstanceId" | "correlationId"> & { correlationId?: string },
    timeoutMs?: number,
  ): Promise<RuntimeCommandResult>;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** SIGKILL and wait until the process is reaped. */
  kill(): Promise<void>;
  /** SIGTERM (drain) and wait for exit; SIGKILL after `graceMs`. */
  stop(graceMs?: number): Promise<void>;
  pause(): void;
  resume(): void;
}

const ROOT = resolve(import.meta.dirname, "../..");
const live = new Set<ChildProcess>();
process.once("exit", () => {
  for (const c of live) {
    c.kill("SIGCONT");
    c.kill("SIGKILL");
  }
});

export async function startRuntimeProcess(o: RuntimeProcessOptions): Promise<RuntimeProcess> {
  const token = o.token ?? randomBytes(16).toString("hex");
  const sizing = { workers: 2, maxConcurrentRuns: 1, localQueueCapacity: 2, maxWorkersPerRun: 1, ...o.sizing };
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? "",
    HOME: process.env.HOME ?? "",
    DROVER_RUNTIME_INSTANCE_ID: o.runtimeInstanceId,
    DROVER_CONTROL_PLANE_ID: o.controlPlaneId ?? "cp-test",
    DROVER_WORKERS: String(sizing.workers),
    DROVER_MAX_CONCURRENT_RUNS: String(sizing.maxConcurrentRuns),
    DROVER_LOCAL_QUEUE_CAPACITY: String(sizing.localQueueCapacity),
    DROVER_MAX_WORKERS_PER_RUN: String(sizing.maxWorkersPerRun),
    DROVER_COMMAND_TOKEN: token,
    NATS_URL: o.natsUrl,
    // The harness identity: these tests are about the runtime, not its rights (test/int/nats-auth*).
    NATS_CREDS: harnessCredentialOf(o.natsUrl),
    DROVER_TRANSPORT: o.transport,
    DROVER_PORT: "0",
    DROVER_STREAM_TAG: o.streamTag,
    DROVER_HEARTBEAT_MS: String(o.heartbeatMs ?? 500),
    ...(o.tenantId ? { DROVER_TENANT_ID: o.tenantId } : {}),
    ...(o.llmBaseUrl ? { DROVER_LLM_BASE_URL: o.llmBaseUrl } : {}),
    ...(o.egress ? { DROVER_EGRESS: JSON.stringify(o.egress) } : {}),
    ...o.env,
  };
  // node with tsx's loader, not the `tsx` CLI: the CLI runs the program in a CHILD node process, so
  // signals to the CLI's pid (SIGKILL, SIGSTOP) would miss the runtime and orphan it, and the pid
  // would not be the one in the runtime's host incarnation.
  // DROVER_CPU_PROF_DIR: the runtime writes a V8 CPU profile there when it exits (stop(), not kill()).
  const profDir = process.env.DROVER_CPU_PROF_DIR;
  const prof = profDir ? ["--cpu-prof", `--cpu-prof-dir=${profDir}`] : [];
  const child = spawn(process.execPath, [...prof, "--import", "tsx", resolve(ROOT, "services/runtime/main.ts")], {
    cwd: ROOT,
    env,
    stdio: ["ignore", "pipe", "pipe"],
  });
  live.add(child);
  const lines: Record<string, unknown>[] = [];
  const listeners = new Set<() => void>();
  let stderr = "";
  let partial = "";
  child.stdout?.on("data", (d: Buffer) => {
    partial += d.toString();
    const parts = partial.split("\n");
    partial = parts.pop() ?? "";
    for (const p of parts) {
      try {
        lines.push(JSON.parse(p) as Record<string, unknown>);
      } catch {
        lines.push({ event: "non-json", text: p });
      }
    }
    for (const l of listeners) l();
  });
  child.stderr?.on("data", (d: Buffer) => {
    stderr = (stderr + d.toString()).slice(-20_000);
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((ok) =>
    child.once("exit", (code, signal) => {
      live.delete(child);
      for (const l of listeners) l();
      ok({ code, signal });
    }),
  );

  const waitForLine = (
    pred: (l: Record<string, unknown>) => boolean,
    timeoutMs = 30_000,
  ): Promise<Record<string, unknown>> =>
    new Promise((ok, fail) => {
      const check = () => {
        const hit = lines.find(pred);
        if (hit) {
          done();
          ok(hit);
        } else if (child.exitCode !== null || child.signalCode !== null) {
          done();
          fail(new Error(`runtime ${o.runtimeInstanceId} exited before the expected line; stderr: ${stderr}`));
        }
      };
      const timer = setTimeout(() => {
        done();
        fail(
          new Error(
            `runtime ${o.runtimeInstanceId}: no matching line within ${timeoutMs} ms; lines: ${JSON.stringify(lines.slice(-5))} stderr: ${stderr}`,
          ),
        );
      }, timeoutMs);
      const done = () => {
        clearTimeout(timer);
        listeners.delete(check);
      };
      listeners.add(check);
      check();
    });

  const listening = await waitForLine((l) => l.event === "listening", o.startTimeoutMs ?? 30_000);
  if (listening.hostIncarnation !== undefined && !String(listening.hostIncarnation).startsWith(`pid:${child.pid}:`)) {
    child.kill("SIGKILL");
    throw new Error(
      `runtime reports incarnation ${String(listening.hostIncarnation)} but the spawned pid is ${child.pid}: signals would miss it`,
    );
  }
  const port = Number(listening.port);
  const endpoint = `127.0.0.1:${port}`;
  let correlation = 0;
  const signal = (s: NodeJS.Signals) => {
    if (child.exitCode === null && child.signalCode === null) child.kill(s);
  };
  return {
    runtimeInstanceId: o.runtimeInstanceId,
    transport: o.transport,
    pid: child.pid ?? -1,
    port,
    endpoint,
    token,
    hostIncarnation: String(listening.hostIncarnation),
    lines,
    stderr: () => stderr,
    waitForLine,
    exited,
    send: (command, timeoutMs = 10_000) =>
      sendCommand(
        endpoint,
        o.transport,
        {
          correlationId: `test-${++correlation}`,
          ...command,
          runtimeInstanceId: o.runtimeInstanceId,
        } as RuntimeCommand,
        token,
        timeoutMs,
      ),
    async kill() {
      signal("SIGCONT");
      signal("SIGKILL");
      await exited;
    },
    async stop(graceMs = 10_000) {
      signal("SIGCONT");
      signal("SIGTERM");
      const timer = setTimeout(() => signal("SIGKILL"), graceMs);
      await exited;
      clearTimeout(timer);
    },
    pause: () => signal("SIGSTOP"),
    resume: () => signal("SIGCONT"),
  };
}
