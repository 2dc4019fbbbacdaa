import type { JetStreamClient } from "@nats-io/jetstream";
import { decodeEvent } from "../contracts/index.ts";
import { apiClient } from "../platform/api-client.ts";
import { follow } from "../platform/follow.ts";
import type { StreamLayout } from "../streams/index.ts";
import { CF_SIGNAL, CF_WAIT } from "./control-flow-workload.ts";
import { approverTokenOf } from "./scenario-config.ts";

export interface SignalsSent {
  /** Resolves once every signal sent so far was answered; lists the answers that were not 202 or 200. */
  stop(): Promise<string[]>;
  readonly sent: () => number;
}

/**
 * `--workload control-flow`: whenever a run's wait opens (`exec.wait-opened` in its journal), sends
 * its signal through the public API, `POST /v1/runs/:id/signals/approval`, with the tenant's
 * `approver` token (a resolver of the wait), so every signal arrives while its wait is open — in the
 * runs the gate kills, sometimes while the runtime is down, to be consumed by the resumed execution.
 */
export async function startWaitSignaller(
  js: JetStreamClient,
  layout: StreamLayout,
  apiUrl: string,
): Promise<SignalsSent> {
  const runOf = new Map<string, string>();
  const answers: Promise<string | undefined>[] = [];
  const p = layout.eventPrefix;
  const follower = await follow(
    js,
    { stream: layout.eventStream, filters: [`${p}.exec.*.*.started`, `${p}.exec.*.*.wait-opened`] },
    (m) => {
      const e = decodeEvent(m.data, { seq: m.seq, subject: m.subject });
      const executionId = m.subject.split(".").at(-2)!;
      if (e.type === "exec.started") runOf.set(executionId, e.data.sharedRunId);
      if (e.type !== "exec.wait-opened" || e.data.stepId !== CF_WAIT || !e.tenantId) return;
      const runId = runOf.get(executionId);
      if (!runId) {
        answers.push(Promise.resolve(`${executionId}: wait opened in an execution never started`));
        return;
      }
      const api = apiClient(apiUrl, approverTokenOf(e.tenantId));
      answers.push(
        api
          .post(`/v1/runs/${runId}/signals/${CF_SIGNAL}`, { payload: { approved: true }, signalId: `proof-${runId}` })
          .then(
            (res) =>
              res.status === 202 || res.status === 200
                ? undefined
                : `${runId}: ${res.status} ${JSON.stringify(res.body)}`,
            (err: unknown) => `${runId}: ${String(err)}`,
          ),
      );
    },
  );
  return {
    sent: () => answers.length,
    stop: async () => {
      await follower.stop();
      return (await Promise.all(answers)).filter((a): a is string => a !== undefined);
    },
  };
}
