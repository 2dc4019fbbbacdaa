import { isTerminal, type RunStatus } from "../../../aggregates/run.ts";
import type { TenantId } from "../../../contracts/index.ts";
import { executionIdsOf } from "../domain/run-view.ts";
import type { ApiDeps } from "./deps.ts";
import type { SseFrame } from "./event-feed.ts";
import { readRunEvents, readRun } from "./run-queries.ts";

const TERMINAL_EVENTS = new Set(["run.completed", "run.failed", "run.cancelled", "run.rejected"]);

/**
 * Opens one run's live feed: its run events and its executions' events, from its submission (or
 * after `afterSeq`), ending with an `end` frame once the run's terminal event was sent. Reads the
 * run first, so an unknown (or another tenant's) run is `not-found` before anything streams. The
 * tenant's feed is read from the run's submission on and filtered here (execution ids are learnt
 * from `run.started` / `run.requeued-for-resume` as they pass), so the cost is the tenant's events
 * since the run began, never the whole stream.
 */
export async function openRunFeed(
  deps: ApiDeps,
  tenantId: TenantId,
  sharedRunId: string,
  afterSeq: number,
): Promise<(signal: AbortSignal) => AsyncIterable<SseFrame>> {
  const view = await readRun(deps.store, tenantId, sharedRunId);
  const executions = new Set(executionIdsOf((await readRunEvents(deps.store, tenantId, sharedRunId)).events));
  const start = Math.max(afterSeq, (view.submittedSeq ?? 1) - 1);
  const prefix = deps.layout.eventPrefix;
  return async function* (signal) {
    if (isTerminal(view.status as RunStatus) && start >= view.lastSeq) {
      yield { kind: "end", status: view.status, seq: view.lastSeq };
      return;
    }
    for await (const frame of deps.feed.follow({ kind: "tenant", tenantId }, start, signal)) {
      if (frame.kind === "caught-up") {
        yield frame;
        continue;
      }
      const [aggregate, , id] = frame.subject.slice(prefix.length + 1).split(".");
      const ours = (aggregate === "run" && id === sharedRunId) || (aggregate === "exec" && executions.has(id ?? ""));
      if (!ours) continue;
      yield frame;
      if (frame.kind !== "event") continue;
      for (const e of executionIdsOf([frame])) executions.add(e);
      if (aggregate === "run" && TERMINAL_EVENTS.has(frame.event.type)) {
        yield { kind: "end", status: frame.event.type.slice("run.".length), seq: frame.seq };
        return;
      }
    }
  };
}
