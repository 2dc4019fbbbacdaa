import { randomUUID } from "node:crypto";
import {
  isDroverError,
  type ErrorCode,
  type RuntimeCommand,
  type RuntimeInstanceId,
} from "../../../contracts/index.ts";
import { sendCommand } from "../../runtime-client.ts";
import type { HostSpec } from "../types.ts";

const PROBE_ATTEMPT_MS = 3_000;

/**
 * Proves an exposure end to end: sends GetQueueStatus for this runtime to `endpoint` (through a
 * Gateway route or a NodePort) until it succeeds. Retried while nothing answers (a route or a node
 * port may take moments to reach the data plane), never when another runtime answers: that is
 * `mismatchCode` at once. Returns undefined on success; `runtime-command-readiness-failed` when
 * nothing succeeded by `deadline`. `via` names the exposure in details ("the Gateway", "NodePort …").
 */
export async function probeExposure(
  endpoint: string,
  spec: HostSpec,
  deadline: number,
  via: string,
  mismatchCode: ErrorCode,
  signal?: AbortSignal,
): Promise<{ code: ErrorCode; detail: string } | undefined> {
  let last = "no attempt";
  for (;;) {
    const cmd: RuntimeCommand = {
      operation: "GetQueueStatus",
      payload: {},
      runtimeInstanceId: spec.runtimeInstanceId as RuntimeInstanceId,
      correlationId: `route-probe-${randomUUID()}`,
    };
    try {
      const r = await sendCommand(
        endpoint,
        spec.transport,
        cmd,
        spec.commandToken,
        Math.min(PROBE_ATTEMPT_MS, Math.max(100, deadline - Date.now())),
      );
      if (r.success) return undefined;
      last = `refused: ${r.failureReason ?? "?"} ${r.failureDetail ?? ""}`;
    } catch (e) {
      if (isDroverError(e, "runtime-identity-mismatch"))
        return { code: mismatchCode, detail: `through ${via} at ${endpoint}: ${e.message}` };
      last = e instanceof Error ? e.message : String(e);
    }
    if (Date.now() >= deadline || signal?.aborted) {
      return {
        code: "runtime-command-readiness-failed",
        detail: `GetQueueStatus through ${via} at ${endpoint} did not succeed in time${signal?.aborted ? " (aborted)" : ""}: ${last}`,
      };
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}
