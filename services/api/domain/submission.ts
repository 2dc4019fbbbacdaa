import { z } from "zod";
import {
  buildEvent,
  DagDefinition,
  DroverError,
  parseDag,
  RUN_INPUT_MAX_BYTES,
  StepOutput,
  canonicalSize,
  requiredStepKinds,
  RunPriority,
  EventId,
  SharedRunId,
  type DagMemo,
  type EventOf,
  type ForkOrigin,
  type TenantId,
  type TenantSettings,
} from "../../../contracts/index.ts";
import { evolveRun, initialRunState, type RunEvent, type RunState } from "../../../aggregates/run.ts";
import type { Decider } from "../../../contracts/decider.ts";

/** Labels a caller may attach: evidence for humans and queries, never authorization. */
export const Labels = z
  .record(z.string().min(1).max(63), z.string().max(256))
  .refine((l) => Object.keys(l).length <= 64, "at most 64 labels");

/**
 * The body of `POST /v1/runs`. Strict: a `tenantId` (or anything else unknown) in the body is a
 * contract violation, because the tenant comes only from the token. The DAG is checked apart
 * (see {@link decideSubmission}) so its failures carry their own code, `dag-invalid`.
 */
export const SubmitRunBody = z
  .object({
    dag: z.record(z.string(), z.unknown()),
    idempotencyKey: z.string().min(1).max(200).optional(),
    labels: Labels.optional(),
    priority: RunPriority.optional().describe(
      "0-100, higher admitted first within the tenant (capped by its maxRunPriority; docs/flow-control.md)",
    ),
    input: StepOutput.optional().describe("the run's input (JSON, at most RUN_INPUT_MAX_BYTES); steps read it by $ref"),
  })
  .strict();
export type SubmitRunBody = z.infer<typeof SubmitRunBody>;

/** Everything the decision needs; ids and time are minted by the shell. */
export interface SubmitRun {
  readonly tenantId: TenantId;
  readonly body: SubmitRunBody;
  readonly settings: TenantSettings;
  readonly sharedRunId: string;
  readonly eventId: string;
  /** The tenant's non-terminal runs, when the API enforces its quota (`overQuota: "reject"`); else undefined. */
  readonly openRuns: number | undefined;
  /** The tenant's runs submitted and not yet started, when the API counts them (its run projection runs); else undefined. */
  readonly queuedRuns?: number | undefined;
  readonly metadata: { readonly now: Date; readonly requestId: string; readonly instanceId: string };
  /** Set by `POST /v1/runs/:id/rerun`: the run this one reruns (never taken from a body). */
  readonly rerunOf?: string;
  /** Set by `POST /v1/runs/:id/fork`: the run this one forks and what it reuses (never taken from a body). */
  readonly forkedFrom?: ForkOrigin;
  /**
   * The submitter's DAGs checked so far (contracts `DagMemo`): a DAG submitted before is checked by
   * its text, not parsed again (~55 µs for a 10-step chain, ~130 for 50 steps). Same verdicts.
   */
  readonly dags?: Pick<DagMemo, "check">;
}

/**
 * The DAG a tenant submits (a run's, or a schedule's for its runs), validated: `dag-invalid`
 * (details.issues lists every broken rule) or `step-kind-not-offered`.
 */
export function checkDag(
  dag: unknown,
  settings: TenantSettings,
  tenantId: TenantId,
  dags?: Pick<DagMemo, "check">,
): DagDefinition {
  // A DAG the memo knows is one `parseDag` accepted (its verdict is a function of the JSON value);
  // anything else, a refusal included, is parsed here, for its issues.
  const known = dags?.check(dag);
  const parsed = known ? { success: true as const, data: known } : parseDag(dag);
  if (!parsed.success) {
    const issues = parsed.error.issues.map((i) => `${["dag", ...i.path].join(".")}: ${i.message}`);
    throw new DroverError("dag-invalid", `the DAG is invalid: ${issues.slice(0, 3).join("; ")}`, {
      details: { issues },
    });
  }
  const offered = new Set((settings.worker?.kinds ?? []).map((k) => `custom:${k}`));
  const never = [...new Set(kindsWithChildren(parsed.data))].filter((k) => k.startsWith("custom:") && !offered.has(k));
  if (never.length > 0)
    throw new DroverError(
      "step-kind-not-offered",
      `tenant ${tenantId}'s worker settings never offer ${never.join(", ")}${settings.worker ? "" : " (the tenant has no worker)"}`,
      { details: { kinds: never } },
    );
  return parsed.data;
}

/** The kinds a DAG needs, with those of its run steps' child DAGs (they run as the same tenant). */
const kindsWithChildren = (dag: DagDefinition): string[] => [
  ...requiredStepKinds(dag),
  ...dag.steps.flatMap((s) => (s.kind === "run" ? kindsWithChildren(DagDefinition.parse(s.dag)) : [])),
];

/**
 * Decides a submission against the run's state (as read when an idempotency key names the run;
 * the initial state otherwise). Returns the `run.submitted` event to append, or no event when the
 * run already exists (a repeated key: the caller answers the existing run). Order matters: the DAG
 * is validated first (a bad request is refused even when its key names a run), then an existing
 * run wins (a retry never counts against the quota), then the quota is checked.
 *
 * Throws `dag-invalid` (details.issues lists every broken rule), `tenant-quota-exceeded` (details:
 * openRuns, maxConcurrentRuns), `tenant-queue-full` (details: queuedRuns, maxQueuedRuns), and a ZodError when the shell minted ids that are not ids (a bug, answered as 500 `internal`).
 */
export function decideSubmission(cmd: SubmitRun, state: RunState): [] | [EventOf<"run.submitted">] {
  const dag = checkDag(cmd.body.dag, cmd.settings, cmd.tenantId, cmd.dags);
  if (cmd.body.input !== undefined && canonicalSize(cmd.body.input) > RUN_INPUT_MAX_BYTES)
    throw new DroverError("contract-violation", `the run input is more than ${RUN_INPUT_MAX_BYTES} bytes of JSON`);
  if (state.status !== "none") return [];
  const max = cmd.settings.maxConcurrentRuns;
  if (cmd.openRuns !== undefined && cmd.openRuns >= max) {
    throw new DroverError(
      "tenant-quota-exceeded",
      `tenant ${cmd.tenantId} has ${cmd.openRuns} unfinished runs, its quota is ${max}`,
      { details: { openRuns: cmd.openRuns, maxConcurrentRuns: max } },
    );
  }
  if (cmd.queuedRuns !== undefined && cmd.queuedRuns >= cmd.settings.maxQueuedRuns)
    throw new DroverError(
      "tenant-queue-full",
      `tenant ${cmd.tenantId} has ${cmd.queuedRuns} runs submitted and not yet started, its limit is ${cmd.settings.maxQueuedRuns}`,
      { details: { queuedRuns: cmd.queuedRuns, maxQueuedRuns: cmd.settings.maxQueuedRuns } },
    );
  const sharedRunId = SharedRunId.parse(cmd.sharedRunId);
  const data = {
    sharedRunId,
    dag,
    ...(cmd.body.idempotencyKey === undefined ? {} : { idempotencyKey: cmd.body.idempotencyKey }),
    source: "api" as const,
    labels: cmd.body.labels ?? {},
    ...(cmd.body.priority === undefined ? {} : { priority: cmd.body.priority }),
    ...(cmd.rerunOf === undefined ? {} : { rerunOf: SharedRunId.parse(cmd.rerunOf) }),
    ...(cmd.forkedFrom === undefined ? {} : { forkedFrom: cmd.forkedFrom }),
    ...(cmd.body.input === undefined ? {} : { input: cmd.body.input }),
  };
  const origin = {
    tenantId: cmd.tenantId,
    correlationId: sharedRunId,
    causationId: `http-request:${cmd.metadata.requestId}`,
    writer: { service: "api" as const, instanceId: cmd.metadata.instanceId },
  };
  return [buildEvent("run.submitted", data, origin, { eventId: EventId.parse(cmd.eventId), now: cmd.metadata.now })];
}

/** The submission as a Decider over the run aggregate (evolve folds at the next sequence, as an append would land). */
export const submissionDecider: Decider<SubmitRun, RunEvent, RunState> = {
  decide: decideSubmission,
  evolve: (s, e) => evolveRun(s, e, s.lastSeq + 1),
  initialState: initialRunState,
};
