import { assertNever } from "../../contracts/assert-never.ts";
import { spawn, type ChildProcess } from "node:child_process";
import { join, resolve } from "node:path";
import { DroverError, type ErrorCode, type ReadinessLayer } from "../../contracts/index.ts";
import { processIncarnation } from "../process-incarnation.ts";
import { processSpace } from "../process-space.ts";
import { killExactIncarnation } from "./exact-kill.ts";
import { LifecycleGate } from "./lifecycle-gate.ts";
import { listensOn } from "./listening-socket.ts";
import { incarnationState, parseProcessIncarnation } from "./proc-table.ts";
import { killGroup, trackGroup, untrackGroup } from "./process-groups.ts";
import { BootingGroups } from "./booting-groups.ts";
import { identityKey, runtimeEnv } from "./runtime-env.ts";
import { bindingEnv, postBinding } from "./pool-binding.ts";
import { followLog, openRuntimeLog } from "./runtime-log.ts";
import { awaitListening, type ChildExit } from "./startup-announcement.ts";
import type { HostEndpoint, HostFacts, HostObservation, HostSpec, HostStartResult, KillResult } from "./types.ts";

import {
  poolSpec,
  type HostRecord,
  type ProcessHostStrategy,
  type ProcessStrategyOptions,
} from "./process-strategy-types.ts";

import { SPAWNER_ENV, spawnerOfSelf } from "./spawner.ts";
export type { ProcessHostStrategy, ProcessStrategyOptions } from "./process-strategy-types.ts";

const ROOT = resolve(import.meta.dirname, "../..");

const STRATEGY_LAYERS: readonly ReadinessLayer[] = ["resource", "host", "endpoint"];
const CLEANUP_BUDGET_MS = 10_000;

/**
 * The process host strategy (hosts.md "Process strategy"): spawns services/runtime as a detached
 * child (its own process group) with identity, tenant and sizing in its environment and the
 * per-instance command token; the runtime binds a loopback port the kernel picks and announces it
 * (`endpoint` holds only if that exact process listens there). It proves `resource`, `host` and `endpoint`;
 * the caller proves `command`. One lifecycle gate per RuntimeInstanceId serializes start and kill.
 *
 * A RuntimeInstanceId gets at most one process: a repeated start converges on the running one
 * (`converged`, source `lifecycle-cache`) after revalidating its incarnation, and is rejected
 * (`host-exited`) once that process is gone — a replacement is a new RuntimeInstanceId. A start
 * that fails kills what it spawned before returning `rejected` (`owned` names it).
 *
 * Every host it starts names its process space (`node`, platform/process-space.ts); a kill of a
 * host that is not its own child is proven through `/proc` only in that same space, and is
 * `out-of-reach` anywhere else (docs/security.md "Fencing process hosts").
 */
export function createProcessStrategy(opts: ProcessStrategyOptions = {}): ProcessHostStrategy {
  const gate = new LifecycleGate();
  const records = new Map<string, HostRecord>();
  const observers = new Set<(fact: HostObservation) => void>();
  const bindHost = opts.bindHost ?? "127.0.0.1";
  const command = opts.command ?? [process.execPath, "--import", "tsx", "services/runtime/main.ts"];
  const baseEnv = opts.baseEnv ?? { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: process.env.HOME ?? "/tmp" };
  const startupTimeoutMs = opts.startupTimeoutMs ?? 30_000;
  const spawner = spawnerOfSelf();
  const booting = new BootingGroups();

  const rejected = (
    code: ErrorCode,
    detail: string,
    layer: ReadinessLayer | undefined,
    owned: string[],
  ): HostStartResult => ({
    outcome: "rejected",
    reason: { code, detail: detail.slice(0, 2000) },
    ...(layer ? { layer } : {}),
    owned,
  });

  function converge(rec: HostRecord, spec: HostSpec): HostStartResult {
    if (rec.identity !== identityKey(spec)) {
      return rejected(
        "host-identity-collision",
        `runtime ${spec.runtimeInstanceId} already has a host started with another identity or sizing`,
        "resource",
        [],
      );
    }
    const inc = rec.running && parseProcessIncarnation(rec.running.host.hostIncarnation);
    if (rec.running && inc && !rec.exit && incarnationState(inc.pid, inc.startTime) === "running") {
      return {
        outcome: "converged",
        convergenceSource: "lifecycle-cache",
        host: rec.running.host,
        endpoint: rec.running.endpoint,
        layersPassed: STRATEGY_LAYERS,
        owned: [],
      };
    }
    const what = rec.running ? `host ${rec.running.host.hostIncarnation} exited` : "earlier start failed";
    return rejected(
      "host-exited",
      `runtime ${spec.runtimeInstanceId}: ${what}; a RuntimeInstanceId never gets a second host`,
      "host",
      [],
    );
  }

  async function stopChild(rec: HostRecord, budgetMs: number): Promise<ChildExit | undefined> {
    if (!rec.child?.pid || !rec.exited) return rec.exit;
    if (!rec.exit) killGroup(rec.child.pid);
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<undefined>((r) => {
      timer = setTimeout(() => r(undefined), budgetMs);
    });
    try {
      return await Promise.race([rec.exited, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  async function spawnAndProve(
    spec: HostSpec,
    rec: HostRecord,
    signal?: AbortSignal,
    onHostCreated?: (host: HostFacts) => Promise<void>,
    pooled?: { readonly poolToken: string },
  ): Promise<HostStartResult> {
    const [file, ...args] = command as [string, ...string[]];
    const log = openRuntimeLog(opts.logDir ?? join(ROOT, ".run/runtimes"), spec.runtimeInstanceId);
    // Followed from before the spawn, so no line is missed.
    const output = await followLog(log.path, (line) => opts.onOutput?.(spec.runtimeInstanceId, line));
    let child: ChildProcess;
    try {
      child = spawn(file, args, {
        cwd: opts.cwd ?? ROOT,
        // Port 0: the runtime binds a port the kernel picks and announces it. A port chosen here and
        // bound there could be taken by another process in between (EADDRINUSE, seen under load).
        // SPAWNER_ENV: once this process is gone, the next provisioner adopts the host (spawner.ts).
        env: {
          ...(pooled
            ? {
                ...baseEnv,
                DROVER_BIND_HOST: bindHost,
                DROVER_POOL_BIND_PORT: "0",
                DROVER_POOL_TOKEN: pooled.poolToken,
              }
            : runtimeEnv(spec, bindHost, 0, baseEnv)),
          [SPAWNER_ENV]: spawner,
        },
        detached: true,
        stdio: ["ignore", log.fd, log.fd],
      });
    } finally {
      log.closeParentCopy();
    }
    const spawnError = new Promise<Error>((r) => child.once("error", r));
    if (child.pid === undefined) {
      await output.stop();
      return rejected("host-creation-failed", `spawn ${file}: ${(await spawnError).message}`, "resource", []);
    }
    const pid = child.pid;
    trackGroup(pid);
    let incarnationOf: string | undefined;
    rec.child = child;
    rec.exited = new Promise((r) =>
      child.once("exit", (exitCode, sig) => {
        untrackGroup(pid);
        rec.exit = { exitCode, signal: sig };
        const hostIncarnation = rec.running?.host.hostIncarnation ?? incarnationOf;
        if (hostIncarnation)
          for (const o of observers)
            o({
              kind: "exited",
              runtimeInstanceId: rec.boundTo ?? spec.runtimeInstanceId,
              hostIncarnation,
              ...rec.exit,
            });
        r(rec.exit);
      }),
    );
    const owned = [`process:${pid}`];
    try {
      incarnationOf = processIncarnation(pid);
    } catch {
      // Already reaped: the process exited before we could read its start time.
    }
    const fail = async (code: ErrorCode, detail: string, layer: ReadinessLayer): Promise<HostStartResult> => {
      const exit = await stopChild(rec, CLEANUP_BUDGET_MS);
      await output.stop();
      const stopped = exit ? "" : ` (and pid ${pid} did not exit within ${CLEANUP_BUDGET_MS} ms of SIGKILL)`;
      return rejected(code, `${detail}${stopped}; log ${log.path}: ${output.tail().slice(-1200)}`, layer, owned);
    };
    // Subscribed before the hook runs, so an announcement printed meanwhile is not missed.
    const listening = awaitListening(
      output,
      rec.exited,
      startupTimeoutMs,
      signal,
      pooled ? "pool-listening" : "listening",
    );
    if (incarnationOf && onHostCreated) {
      try {
        await onHostCreated({ hostIncarnation: incarnationOf, pid, node: processSpace() });
      } catch (e) {
        await stopChild(rec, CLEANUP_BUDGET_MS);
        await output.stop();
        throw e;
      }
    }
    // Holdable only once its host is recorded: a successor of a provisioner that dies mid-hold can
    // then find the stopped member and stop it for good (orphan-members.ts); unrecorded, it would stay stopped.
    if (pooled && rec.exit === undefined) booting.add(pid);
    const outcome = await listening;
    booting.remove(pid);
    switch (outcome.kind) {
      case "exited":
        return fail(
          "process-exited-during-startup",
          `pid ${pid} exited (code ${outcome.exit.exitCode}, signal ${outcome.exit.signal}) before listening`,
          "host",
        );
      case "timeout":
        return fail(
          "endpoint-resolution-failed",
          `pid ${pid} did not announce a listening port within ${startupTimeoutMs} ms`,
          "endpoint",
        );
      case "aborted":
        return fail("host-creation-failed", `start of ${spec.runtimeInstanceId} was aborted`, "resource");
      case "listening":
        break;
      default:
        return assertNever(outcome, "start-up outcome");
    }
    const line = outcome.line;
    if (!incarnationOf || line.hostIncarnation !== incarnationOf) {
      return fail(
        "runtime-identity-mismatch",
        `runtime announced incarnation ${line.hostIncarnation}, spawned ${incarnationOf ?? `pid ${pid} (start time unknown)`}`,
        "host",
      );
    }
    const port = line.port;
    if (!listensOn(pid, port))
      return fail(
        "endpoint-resolution-failed",
        `pid ${pid} announced port ${port} but does not listen on it`,
        "endpoint",
      );
    const inc = parseProcessIncarnation(incarnationOf);
    if (rec.exit || !inc || incarnationState(inc.pid, inc.startTime) !== "running") {
      return fail("process-exited-during-startup", `pid ${pid} exited right after announcing its port`, "host");
    }
    await output.stop();
    const hostPort = `${bindHost}:${port}`;
    const endpoint: HostEndpoint = {
      endpoint: spec.transport === "http" || pooled ? `http://${hostPort}` : hostPort,
      aliases: [],
    };
    rec.running = { host: { hostIncarnation: incarnationOf, pid, node: processSpace() }, endpoint };
    return { outcome: "created", host: rec.running.host, endpoint, layersPassed: STRATEGY_LAYERS, owned };
  }

  return {
    provider: "process",
    start(spec, signal, onHostCreated) {
      return gate.run(spec.runtimeInstanceId, async () => {
        const known = records.get(spec.runtimeInstanceId);
        if (known) return converge(known, spec);
        // Recorded before anything is spawned: a failed start also consumes the id.
        const rec: HostRecord = { identity: identityKey(spec) };
        records.set(spec.runtimeInstanceId, rec);
        return spawnAndProve(spec, rec, signal, onHostCreated);
      });
    },
    kill(runtimeInstanceId, host, budgetMs): Promise<KillResult> {
      const inc = parseProcessIncarnation(host.hostIncarnation);
      if (!inc)
        return Promise.reject(
          new DroverError("host-spec-invalid", `${host.hostIncarnation} is not a process incarnation`),
        );
      return gate.run(runtimeInstanceId, async () => {
        const rec = records.get(runtimeInstanceId);
        if (rec?.child && rec.running?.host.hostIncarnation === host.hostIncarnation) {
          const exit = await stopChild(rec, budgetMs);
          if (!exit)
            return { outcome: "timeout", detail: `pid ${inc.pid} did not exit within ${budgetMs} ms of SIGKILL` };
          return {
            outcome: "killed",
            proof: { kind: "process-exit", pid: inc.pid, exitCode: exit.exitCode, signal: exit.signal },
          };
        }
        // Not our child (we restarted, or another service spawned it): prove the exit through /proc,
        // but only a /proc of the host's own process space: elsewhere a missing pid proves nothing.
        const here = processSpace();
        if (host.node !== here)
          return {
            outcome: "out-of-reach",
            detail: `pid ${inc.pid} lives in process space ${host.node ?? "(not recorded)"}, this fencer in ${here}: its /proc cannot prove that host gone; the provisioner that owns it must kill it`,
          };
        return killExactIncarnation(inc.pid, inc.startTime, budgetMs);
      });
    },
    observe(onFact) {
      observers.add(onFact);
      return () => {
        observers.delete(onFact);
      };
    },
    async close() {
      observers.clear();
    },
    startPooled(memberId, poolToken, onHostCreated) {
      const spec = poolSpec(memberId);
      return gate.run(memberId, async () => {
        if (records.has(memberId)) return converge(records.get(memberId)!, spec);
        const rec: HostRecord = { identity: identityKey(spec) };
        records.set(memberId, rec);
        return spawnAndProve(spec, rec, undefined, onHostCreated, { poolToken });
      });
    },
    holdBoots: (hold) => booting.hold(hold),
    canBind(memberId) {
      const rec = records.get(memberId);
      return !!rec?.running && !rec.exit && !rec.boundTo;
    },
    bind(memberId, poolToken, spec) {
      return gate.run(memberId, () =>
        gate.run(spec.runtimeInstanceId, async () => {
          const rec = records.get(memberId);
          if (!rec?.running || rec.exit || rec.boundTo || records.has(spec.runtimeInstanceId))
            return rejected(
              "host-exited",
              `pool member ${memberId} cannot be bound (gone, bound, or id taken)`,
              "host",
              [],
            );
          rec.boundTo = spec.runtimeInstanceId;
          records.set(spec.runtimeInstanceId, rec);
          const r = await postBinding(
            rec.running.endpoint.endpoint,
            poolToken,
            bindingEnv(spec, bindHost, 0), // the bound runtime binds a port the kernel picks
            startupTimeoutMs,
          );
          const running = rec.running.host;
          if (!r.ok || r.hostIncarnation !== running.hostIncarnation || !listensOn(running.pid as number, r.port)) {
            const why = r.ok ? `bound runtime answered port ${r.port} / ${r.hostIncarnation}` : r.detail;
            await stopChild(rec, CLEANUP_BUDGET_MS);
            return rejected(
              "endpoint-resolution-failed",
              `binding ${memberId} as ${spec.runtimeInstanceId}: ${why}`,
              "endpoint",
              [`process:${running.pid}`],
            );
          }
          const hostPort = `${bindHost}:${r.port}`;
          const endpoint: HostEndpoint = {
            endpoint: spec.transport === "http" ? `http://${hostPort}` : hostPort,
            aliases: [],
          };
          rec.running = { host: running, endpoint };
          return {
            outcome: "converged",
            convergenceSource: `warm-pool:${memberId}`,
            host: running,
            endpoint,
            layersPassed: STRATEGY_LAYERS,
            owned: [],
          };
        }),
      );
    },
    async killAll(budgetMs = CLEANUP_BUDGET_MS) {
      await Promise.all([...new Set(records.values())].map((rec) => stopChild(rec, budgetMs)));
    },
    liveHosts() {
      // A bound pool member is listed once, under the runtime it was bound to.
      return [...records.entries()].flatMap(([runtimeInstanceId, r]) =>
        r.running && !r.exit && (r.boundTo ?? runtimeInstanceId) === runtimeInstanceId
          ? [{ runtimeInstanceId, host: r.running.host }]
          : [],
      );
    },
    livePids() {
      return [...new Set(records.values())].flatMap((r) =>
        r.child?.pid !== undefined && !r.exit ? [r.child.pid] : [],
      );
    },
  };
}
