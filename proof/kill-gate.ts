import type { JetStreamClient } from "@nats-io/jetstream";
import { decodeEvent } from "../contracts/index.ts";
import { follow, type Follower } from "../platform/follow.ts";
import { runtimeRef, type EventStore, type StreamLayout } from "../streams/index.ts";
import type { KillRecord } from "./assertions.ts";
import { isPodRuntime, podRuntimePid } from "./pod-process.ts";

/**
 * Kills each impacted tenant's runtime once its in-flight execution has `afterSteps` durable
 * `step-completed` events (of the steps `counts` names: the control-flow workload counts map items)
 * — gated on the journal, never on a sleep. The signal (SIGKILL: a crash;
 * SIGSTOP: a zombie the fence must kill) goes to the exact runtime process named by the runtime's
 * `host-started` (process hosts), or the runtime process inside the Pod with that UID (local cluster:
 * a crash of the container, which Kubernetes reports and drover must recover from).
 *
 * The scenario also needs the tenant's `queuedBehind` other runs in that runtime's local queue when
 * it dies (the local-queued recovery the proof asserts): the kill waits until the log shows each of
 * them `dispatched` to that runtime. A dispatch still in flight when the kill landed used to fail
 * with `runtime-unreachable` instead, and its run was placed again as ordinary queued work, never a
 * recovery item (seen at P=10 during a NATS leader election, which delayed admission). The step after
 * the kill point holds 5 s in the killed run, so the wait still lands mid-execution.
 */
export async function startKillGate(
  js: JetStreamClient,
  store: EventStore,
  layout: StreamLayout,
  impacted: ReadonlySet<string>,
  afterSteps: number,
  signal: "SIGKILL" | "SIGSTOP",
  counts: (stepId: string) => boolean,
  onKill: (k: KillRecord) => void,
  queuedBehind = 2,
): Promise<Follower> {
  const execs = new Map<
    string,
    { tenantId: string; sharedRunId: string; runtime: string; steps: number; target: Promise<KillTarget> }
  >();
  const killed = new Set<string>();
  /** Runs the log shows dispatched to each runtime. */
  const dispatched = new Map<string, Set<string>>();
  /** Executions past their kill point, waiting for their tenant's other runs to be dispatched. */
  const due = new Map<string, { executionId: string; m: { info: { timestampNanos: number } }; seenAtMs: number }>();
  const p = layout.eventPrefix;
  const kill = async (executionId: string, m: { info: { timestampNanos: number } }, seenAtMs: number) => {
    const x = execs.get(executionId)!;
    const target = await x.target;
    const pid = target.pid();
    if (!pid) throw new Error(`runtime ${x.runtime} (${target.hostIncarnation}) has no process to kill`);
    const killedAtMs = Date.now();
    process.kill(pid, signal);
    onKill({
      tenantId: x.tenantId,
      runtimeInstanceId: x.runtime,
      hostIncarnation: target.hostIncarnation,
      executionId,
      sharedRunId: x.sharedRunId,
      completedAtKill: x.steps,
      killedAtMs,
      stepDurableAtMs: Math.floor(m.info.timestampNanos / 1e6),
      stepSeenAtMs: seenAtMs,
    });
  };
  const queuedOn = (runtime: string, sharedRunId: string) =>
    [...(dispatched.get(runtime) ?? [])].filter((r) => r !== sharedRunId).length >= queuedBehind;
  return follow(
    js,
    {
      stream: layout.eventStream,
      filters: [`${p}.exec.*.*.started`, `${p}.exec.*.*.step-completed`, `${p}.run.*.*.dispatched`],
    },
    async (m) => {
      const e = decodeEvent(m.data, { seq: m.seq, subject: m.subject });
      const tenantId = e.tenantId ?? "";
      if (!impacted.has(tenantId) || killed.has(tenantId)) return;
      if (e.type === "run.dispatched") {
        const runtime = e.data.runtimeInstanceId as string;
        dispatched.set(runtime, new Set([...(dispatched.get(runtime) ?? []), m.subject.split(".").at(-2)!]));
        const d = due.get(tenantId);
        const x = d && execs.get(d.executionId);
        if (!d || !x || x.runtime !== runtime || !queuedOn(runtime, x.sharedRunId)) return;
        due.delete(tenantId);
        killed.add(tenantId);
        return kill(d.executionId, d.m, d.seenAtMs);
      }
      const executionId = m.subject.split(".").at(-2)!;
      if (e.type === "exec.started") {
        // Resolved now, not at the kill: the signal must land while the execution is still running.
        const target = killTarget(store, e.data.runtimeInstanceId);
        target.catch(() => undefined);
        execs.set(executionId, {
          tenantId,
          sharedRunId: e.data.sharedRunId,
          runtime: e.data.runtimeInstanceId,
          steps: 0,
          target,
        });
      }
      const x = execs.get(executionId);
      if (e.type !== "exec.step-completed" || !x || !counts(e.data.stepId)) return;
      x.steps++;
      if (x.steps < afterSteps || due.has(tenantId)) return;
      if (!queuedOn(x.runtime, x.sharedRunId)) {
        due.set(tenantId, { executionId, m, seenAtMs: Date.now() });
        return;
      }
      killed.add(tenantId);
      return kill(executionId, m, Date.now());
    },
  );
}

interface KillTarget {
  readonly hostIncarnation: string;
  /** The process to signal now (the pid is re-checked for a Pod: it must still carry the Pod's UID). */
  pid(): number | undefined;
}

async function killTarget(store: EventStore, runtime: string): Promise<KillTarget> {
  const host = (await store.read(runtimeRef(runtime))).events.find(
    (s) => s.event.type === "runtime.host-started",
  )?.event;
  if (host?.type !== "runtime.host-started") throw new Error(`runtime ${runtime} has no host to kill`);
  const { hostIncarnation, pid } = host.data;
  if (pid) return { hostIncarnation, pid: () => pid };
  let cached = podRuntimePid(hostIncarnation);
  return {
    hostIncarnation,
    pid: () => {
      if (cached === undefined || !isPodRuntime(cached, hostIncarnation)) cached = podRuntimePid(hostIncarnation);
      return cached;
    },
  };
}
