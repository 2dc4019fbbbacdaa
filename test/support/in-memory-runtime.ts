import type { RuntimeCommand, RuntimeCommandResult } from "../../contracts/index.ts";
import { randomIds, systemClock } from "../../platform/envelope.ts";
import { runRef, type EventStore } from "../../streams/index.ts";
import { looseEvent } from "./loose-event.ts";

/**
 * A runtime's command transport in memory (proves no transport): every DispatchRun is accepted, and
 * the run "runs" for `runMs`, its `started` and `completed` appended as the runtime would. Admission
 * tests use it to drive runs through the real log; `stop()` clears the pending timers.
 */
export function inMemoryRuntime(store: EventStore, runMs: number) {
  const timers = new Set<NodeJS.Timeout>();
  const finish = async (c: Extract<RuntimeCommand, { operation: "DispatchRun" }>) => {
    const { tenantId, sharedRunId, localRunId, dispatchedSeq } = c.payload;
    const env = {
      writer: { service: "runtime" as const, instanceId: c.runtimeInstanceId, runtimeInstanceId: c.runtimeInstanceId },
      clock: systemClock,
      ids: randomIds,
    };
    const executionId = `ex-${sharedRunId}`;
    const mk = (type: "run.started" | "run.completed", data: unknown) =>
      looseEvent(env as never, type, data, { tenantId, correlationId: sharedRunId, causationId: "test-runtime" });
    const ref = runRef(tenantId, sharedRunId);
    const started = await store.append(
      ref,
      mk("run.started", { executionId, localRunId, runtimeInstanceId: c.runtimeInstanceId }),
      { expectedSeq: dispatchedSeq },
    );
    await new Promise<void>((resolve) => {
      const t = setTimeout(() => (timers.delete(t), resolve()), runMs);
      timers.add(t);
    });
    await store.append(ref, mk("run.completed", { executionId, localRunId, outputDigest: "0".repeat(64) }), {
      expectedSeq: started.seq,
    });
  };
  const send = async (_endpoint: string, _t: unknown, c: RuntimeCommand): Promise<RuntimeCommandResult> => {
    if (c.operation === "DispatchRun") void finish(c).catch(() => undefined);
    return {
      success: true,
      operation: c.operation,
      runtimeInstanceId: c.runtimeInstanceId,
      hostIncarnation: "pid:1:1" as never,
      payload: {},
      timings: { receivedAt: new Date().toISOString(), handledMs: 1 },
    };
  };
  return {
    send,
    stop() {
      for (const t of timers) clearTimeout(t);
    },
  };
}
