import type { JetStreamClient, JsMsg } from "@nats-io/jetstream";
import { decodeEvent } from "../contracts/index.ts";
import { follow, type Follower } from "../platform/follow.ts";
import { execRef, runtimeRef, type EventStore, type StreamLayout } from "../streams/index.ts";
import type { KillRecord } from "./assertions.ts";
import { isPodRuntime, podRuntimePid } from "./pod-process.ts";

/**
 * Kills each impacted tenant's runtime once its in-flight execution has `afterSteps` durable
 * `step-completed` events (of the steps `counts` names: the control-flow workload counts map items)
 * — gated on the journal, never on a sleep. The signal (SIGKILL: a crash;
 * SIGSTOP: a zombie the fence must kill) goes to the exact runtime process named by the runtime's
 * `host-started` (process hosts), or the runtime process inside the Pod with that UID (local cluster:
 * a crash of the container, which Kubernetes reports and drover must recover from).
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
): Promise<Follower> {
  const execs = new Map<
    string,
    { tenantId: string; sharedRunId: string; runtime: string; steps: number; target: Promise<KillTarget> }
  >();
  const killed = new Set<string>();
  const p = layout.eventPrefix;
  let handled = 0;
  const handle = async (m: JsMsg) => {
    handled = m.seq;
    const e = decodeEvent(m.data, { seq: m.seq, subject: m.subject });
    const tenantId = e.tenantId ?? "";
    if (!impacted.has(tenantId) || killed.has(tenantId)) return;
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
    if (x.steps < afterSteps) return;
    killed.add(tenantId);
    const seenAtMs = Date.now();
    // The gate may lag the journal (a NATS leader election holds its follower for seconds; seen in CI:
    // an execution killed 146 ms after it completed, so no resume was due and the proof failed as a
    // harness fault). Read the execution as it is now: one that ended is not in flight, and the
    // tenant's next execution to reach `afterSteps` is killed instead.
    // (A read that fails, the election again, leaves the kill as it was decided.)
    const now = await store.read(execRef(tenantId, executionId)).catch(() => undefined);
    if (now?.events.some((s) => s.event.type === "exec.completed" || s.event.type === "exec.failed")) {
      execs.delete(executionId);
      killed.delete(tenantId);
      return;
    }
    const target = await x.target;
    const pid = target.pid();
    if (!pid) throw new Error(`runtime ${x.runtime} (${target.hostIncarnation}) has no process to kill`);
    const killedAtMs = Date.now();
    process.kill(pid, signal);
    onKill({
      tenantId,
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
  return resilientFollow(
    js,
    layout.eventStream,
    [`${p}.exec.*.*.started`, `${p}.exec.*.*.step-completed`],
    handle,
    () => handled,
  );
}

/**
 * `follow` that starts again after the last handled message when its consumer ends by itself: a
 * NATS cluster electing a new stream leader can end an ordered consumer's iteration, and a gate that
 * stopped following would never kill the next runtime (seen: `--kill-nats-leader` at P=1, where the
 * leader then died at the first runtime kill and the second tenant's runtime was never killed).
 */
async function resilientFollow(
  js: JetStreamClient,
  stream: string,
  filters: string[],
  handle: (m: JsMsg) => Promise<void>,
  handled: () => number,
): Promise<Follower> {
  let stopped = false;
  let current = await follow(js, { stream, filters }, handle);
  const caughtUp = current.caughtUp;
  const done = (async () => {
    for (;;) {
      await current.done.catch(() => undefined);
      if (stopped) return;
      await new Promise((r) => setTimeout(r, 500));
      if (stopped) return;
      current = await follow(js, { stream, filters, fromSeq: handled() + 1 }, handle).catch(() => current);
    }
  })();
  return {
    caughtUp,
    done,
    async stop() {
      stopped = true;
      await current.stop();
      await done;
    },
  };
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
