import { isTerminal, type RunState } from "../../../aggregates/run.ts";
import { currentWorkerVersion } from "../../../aggregates/capacity/worker-version.ts";
import {
  BUILTIN_STEP_KINDS,
  DroverError,
  requiredKindOf,
  type RuntimeWorker,
  type WorkerVersion,
} from "../../../contracts/index.ts";

/** What an upgrade decision reads of a runtime: its registration's owner, worker and step kinds, and its lifecycle. */
export interface UpgradeRuntime {
  readonly runtimeInstanceId: string;
  readonly tenantId?: string;
  readonly status: string;
  readonly worker?: RuntimeWorker;
  readonly stepKinds?: readonly string[];
}

/** A run step as the journal shows it (`GET /v1/runs/:id` steps). */
export interface UpgradeStep {
  readonly id: string;
  readonly state: string;
}

export type UpgradeDecision =
  | {
      readonly outcome: "upgrade";
      readonly fromVersion: WorkerVersion;
      readonly toVersion: WorkerVersion;
      readonly kinds: readonly string[];
    }
  | { readonly outcome: "already-on-version"; readonly version: WorkerVersion };

/** Steps that will not run again: their journal settled them. */
const SETTLED = new Set(["completed", "skipped"]);

/** The kinds the run's remaining steps (neither completed nor skipped) need, sorted and unique. */
export function remainingKinds(state: RunState, steps: readonly UpgradeStep[]): string[] {
  const settled = new Set(steps.filter((s) => SETTLED.has(s.state)).map((s) => s.id));
  const remaining = (state.dag?.steps ?? []).filter((s) => !settled.has(s.id));
  return [...new Set(remaining.map(requiredKindOf))].sort();
}

/**
 * Whether run `state` may move to worker version `target` (docs/worker-versions.md "Upgrade"),
 * absent: the tenant's current version. A version is known by the registrations of the tenant's
 * runtimes that ran it (any lifecycle: a retired runtime still says what its version offered); it
 * offers the kinds those registrations name, the kinds placement matches on. The run must be pinned
 * (started) and unfinished; the target deployed after its version (an upgrade only moves forward)
 * and offering every kind its remaining steps need. The same version answers `already-on-version`.
 * Pure: throws the refusal as a DroverError naming what is missing.
 */
export function decideUpgrade(
  state: RunState,
  steps: readonly UpgradeStep[],
  runtimes: readonly UpgradeRuntime[],
  target: WorkerVersion | undefined,
): UpgradeDecision {
  const sharedRunId = state.sharedRunId ?? "?";
  const tenantId = state.tenantId ?? "";
  if (isTerminal(state.status))
    throw new DroverError("run-terminal", `run ${sharedRunId} already ${state.status}`, {
      details: { sharedRunId, status: state.status },
    });
  const pinned = state.workerVersion;
  if (pinned === undefined)
    throw new DroverError("run-not-pinned", `run ${sharedRunId} has not started: it is pinned to no worker version`, {
      details: { sharedRunId, status: state.status },
    });
  const mine = runtimes.filter((r) => r.tenantId === tenantId && r.worker);
  const toVersion = target ?? currentWorkerVersion(mine, tenantId);
  if (toVersion === undefined)
    throw new DroverError("worker-version-unknown", `tenant ${tenantId} has no live runtime of a current version`, {
      details: { sharedRunId, version: null },
    });
  if (toVersion === pinned) return { outcome: "already-on-version", version: pinned };
  const ofTarget = mine.filter((r) => r.worker!.version === toVersion);
  if (ofTarget.length === 0)
    throw new DroverError(
      "worker-version-unknown",
      `no runtime of tenant ${tenantId} ran worker version ${toVersion}`,
      {
        details: { sharedRunId, version: toVersion },
      },
    );
  const deployed = (v: string) =>
    mine
      .filter((r) => r.worker!.version === v)
      .reduce((at, r) => (r.worker!.deployedAt > at ? r.worker!.deployedAt : at), "");
  if (deployed(toVersion) <= deployed(pinned))
    throw new DroverError(
      "worker-version-not-newer",
      `worker version ${toVersion} was deployed before ${pinned}, the version run ${sharedRunId} is pinned to`,
      { details: { sharedRunId, fromVersion: pinned, toVersion, deployedAt: deployed(toVersion) } },
    );
  const kinds = remainingKinds(state, steps);
  // A registration naming no kinds offers the built-ins (as admission reads it).
  const offered = new Set(ofTarget.flatMap((r) => r.stepKinds ?? BUILTIN_STEP_KINDS));
  const missing = kinds.filter((k) => !offered.has(k));
  if (missing.length > 0)
    throw new DroverError(
      "upgrade-missing-kinds",
      `worker version ${toVersion} lacks ${missing.join(", ")}, needed by run ${sharedRunId}'s remaining steps`,
      { details: { sharedRunId, fromVersion: pinned, toVersion, missingKinds: missing } },
    );
  return { outcome: "upgrade", fromVersion: pinned, toVersion, kinds };
}
