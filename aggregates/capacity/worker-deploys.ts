import type { EventOf } from "../../contracts/index.ts";

/** A tenant's deploys as its `drover.worker.<tenant>.deploys` aggregate records them (docs/worker-versions.md). */
export interface DeployState {
  /** The aggregate's last sequence: the expectation of the next conditional append. */
  readonly lastSeq: number;
  /** The last `worker.deployed`: the tenant's current worker version. Undefined: never deployed by event. */
  readonly deployed?: { readonly seq: number; readonly data: EventOf<"worker.deployed">["data"] };
  /** The oldest `deploy-requested` no `deployed` answered yet (requests after it are answered by the same deploy). */
  readonly pending?: { readonly seq: number; readonly requestedBy: string };
}

type Stored = { readonly seq: number; readonly event: { readonly type: string; readonly data: unknown } };

/** Folds the aggregate's events in stream order (pure). Events of other types are not expected there and are passed over. */
export function foldDeploys(events: readonly Stored[], lastSeq: number): DeployState {
  let deployed: DeployState["deployed"];
  let pending: DeployState["pending"];
  for (const e of events) {
    if (e.event.type === "worker.deployed") {
      deployed = { seq: e.seq, data: e.event.data as EventOf<"worker.deployed">["data"] };
      pending = undefined;
    } else if (e.event.type === "worker.deploy-requested" && pending === undefined) {
      pending = { seq: e.seq, requestedBy: (e.event.data as EventOf<"worker.deploy-requested">["data"]).requestedBy };
    }
  }
  return { lastSeq, ...(deployed ? { deployed } : {}), ...(pending ? { pending } : {}) };
}

/**
 * What a deployer does with the version it built, given what the aggregate holds (pure):
 * - `append`: record it (conditional on `state.lastSeq`);
 * - `current`: it is deployed already and no request waits for an answer: nothing to append.
 * A pending request is always answered, even with the version deployed already (the request then
 * records who asked, and its answer names the version in force).
 */
export function deployDecision(state: DeployState, version: string): "append" | "current" {
  if (state.pending) return "append";
  return state.deployed?.data.version === version ? "current" : "append";
}
