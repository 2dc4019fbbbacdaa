import { foldExecution } from "../../../aggregates/execution.ts";
import { foldRun } from "../../../aggregates/run.ts";
import {
  canonicalSize,
  DroverError,
  RUN_INPUT_MAX_BYTES,
  SharedRunId,
  StepId,
  StepOutput,
  type TenantId,
} from "../../../contracts/index.ts";
import { aggregateSubject, execRef, runRef } from "../../../streams/subjects.ts";
import { mergePatch, planFork, type ForkRunBody } from "../domain/fork.ts";
import type { ApiDeps } from "./deps.ts";
import { decideOnRun } from "./run-append.ts";
import { readAggregate } from "./run-queries.ts";
import type { Submitted, createSubmitter } from "./submit-run.ts";

/**
 * `POST /v1/runs/:id/fork`: reads the original (the tenant's own subjects only, so another
 * tenant's run is `not-found`) and its execution journal, plans what the fork reuses (pure, see
 * planFork), submits the fork like any run (the same idempotency key mechanism: a repeated key
 * answers the existing fork), then records `run.forked` on the original, conditionally on its last
 * sequence and once per fork. A crash between the two leaves the fork without its back link; the
 * same request (same key) adds it.
 */
export async function forkRun(
  deps: ApiDeps,
  submit: ReturnType<typeof createSubmitter>,
  tenantId: TenantId,
  sharedRunId: string,
  body: ForkRunBody,
  by: string,
  requestId: string,
): Promise<Submitted> {
  const original = foldRun(await readAggregate(deps.store, runRef(tenantId, sharedRunId)));
  if (original.status === "none" || !original.dag)
    throw new DroverError("not-found", `no run ${sharedRunId}`, { details: { sharedRunId } });
  const journal =
    original.executionId === undefined
      ? undefined
      : foldExecution(await readAggregate(deps.store, execRef(tenantId, original.executionId)));
  const origin = planFork(original, journal, body.fromStep);
  const input = body.inputPatch === undefined ? original.input : mergePatch(original.input ?? null, body.inputPatch);
  const parsed = StepOutput.safeParse(input);
  if (input !== undefined && (!parsed.success || canonicalSize(parsed.data) > RUN_INPUT_MAX_BYTES))
    throw new DroverError(
      "fork-invalid",
      `the patched input is not a run input of at most ${RUN_INPUT_MAX_BYTES} bytes`,
    );
  const submitted = await submit(
    tenantId,
    {
      dag: original.dag,
      labels: { ...(body.labels ?? labelsOf(await readAggregate(deps.store, runRef(tenantId, sharedRunId)))) },
      ...(input === undefined || input === null ? {} : { input: parsed.data! }),
      ...(body.idempotencyKey === undefined ? {} : { idempotencyKey: body.idempotencyKey }),
    },
    requestId,
    undefined,
    origin,
  );
  const forkRunId = submitted.run.sharedRunId!;
  await linkFork(deps, tenantId, sharedRunId, forkRunId, body.fromStep, by, requestId);
  return submitted;
}

const labelsOf = (events: readonly { event: { type: string; data: unknown } }[]): Record<string, string> =>
  (events.find((e) => e.event.type === "run.submitted")?.event.data as { labels?: Record<string, string> })?.labels ??
  {};

async function linkFork(
  deps: ApiDeps,
  tenantId: TenantId,
  sharedRunId: string,
  forkRunId: string,
  fromStep: string,
  by: string,
  requestId: string,
): Promise<void> {
  const msgId = `${aggregateSubject(deps.layout, runRef(tenantId, sharedRunId))}:forked:${forkRunId}`;
  await decideOnRun<undefined, "run.forked">(deps, tenantId, sharedRunId, requestId, (history) =>
    foldRun(history.events).forks.some((f) => f.forkRunId === forkRunId)
      ? { answer: undefined }
      : {
          append: {
            type: "run.forked",
            data: { forkRunId: SharedRunId.parse(forkRunId), fromStep: StepId.parse(fromStep), by },
            msgId,
          },
          answer: () => undefined,
        },
  );
}
