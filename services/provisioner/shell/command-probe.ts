import { randomUUID } from "node:crypto";
import {
  isDroverError,
  QueueStatus,
  type Reason,
  type RuntimeCommand,
  type RuntimeInstanceId,
  type Transport,
} from "../../../contracts/index.ts";
import { sendCommand } from "../../../platform/runtime-client.ts";

export type ProbeResult =
  { readonly ok: true; readonly detail: string } | { readonly ok: false; readonly reason: Reason };

export interface ProbeTarget {
  readonly runtimeInstanceId: string;
  readonly hostIncarnation: string;
  readonly endpoint: string;
  readonly transport: Transport;
  readonly token: string;
}

const ATTEMPT_TIMEOUT_MS = 3_000;

/**
 * The `command` readiness layer: a real GetQueueStatus over the runtime's own transport, with the
 * routing header and instance token, answered by the exact RuntimeInstanceId *and* host
 * incarnation we started. Not a TCP connect, not a health endpoint. Retried until `budgetMs`
 * while the runtime is unreachable (a listener can precede the handler by moments); a wrong
 * responder is never retried.
 *
 * Never throws. Reasons: `runtime-identity-mismatch` (another id or incarnation answered),
 * `runtime-command-readiness-failed` (unreachable, refused, or an answer that is not a queue status).
 */
export async function probeCommandReadiness(t: ProbeTarget, budgetMs: number): Promise<ProbeResult> {
  const deadline = Date.now() + budgetMs;
  let last = "no attempt";
  for (;;) {
    const cmd: RuntimeCommand = {
      operation: "GetQueueStatus",
      payload: {},
      runtimeInstanceId: t.runtimeInstanceId as RuntimeInstanceId,
      correlationId: `readiness-${randomUUID()}`,
    };
    try {
      const r = await sendCommand(
        t.endpoint,
        t.transport,
        cmd,
        t.token,
        Math.min(ATTEMPT_TIMEOUT_MS, Math.max(100, deadline - Date.now())),
      );
      if (r.hostIncarnation !== t.hostIncarnation) {
        return fail(
          "runtime-identity-mismatch",
          `expected incarnation ${t.hostIncarnation}, ${r.runtimeInstanceId} answered as ${r.hostIncarnation}`,
        );
      }
      if (!r.success)
        return fail(
          "runtime-command-readiness-failed",
          `GetQueueStatus refused: ${r.failureReason ?? "?"} ${r.failureDetail ?? ""}`,
        );
      const status = QueueStatus.safeParse(r.payload.queue);
      if (!status.success)
        return fail(
          "runtime-command-readiness-failed",
          `GetQueueStatus answered without a queue status: ${status.error.message}`,
        );
      return {
        ok: true,
        detail: `GetQueueStatus over ${t.transport} answered by ${r.runtimeInstanceId} ${r.hostIncarnation}: ${status.data.availableSlots} slots, ${status.data.workers} workers`,
      };
    } catch (e) {
      if (isDroverError(e, "runtime-identity-mismatch")) return fail("runtime-identity-mismatch", e.message);
      last = e instanceof Error ? e.message : String(e);
    }
    if (Date.now() >= deadline)
      return fail(
        "runtime-command-readiness-failed",
        `GetQueueStatus at ${t.endpoint} did not succeed within ${budgetMs} ms: ${last}`,
      );
    await new Promise((r) => setTimeout(r, 100));
  }
}

const fail = (code: Reason["code"], detail: string): ProbeResult => ({
  ok: false,
  reason: { code, detail: detail.slice(0, 2000) },
});
