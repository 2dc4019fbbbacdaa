import { z } from "zod";
import { RunSummary } from "../domain/run-list.ts";
import { STEP_STATES } from "../domain/step-states.ts";

/**
 * Response schemas of the run routes: they serialize the answers and describe them in
 * `/v1/openapi.json`. Events and DAGs are described as objects (their schemas are the contracts'
 * event catalogue and `DagDefinition`).
 */
const Json = z.record(z.string(), z.unknown());

export const RunViewAnswer = z
  .object({
    sharedRunId: z.string(),
    tenantId: z.string(),
    status: z.string(),
    submittedSeq: z.number().nullable(),
    lastSeq: z.number().describe("stream sequence of the run's last event"),
    executionId: z.string().nullable(),
    placement: z
      .object({ runtimeInstanceId: z.string(), localRunId: z.string(), transport: z.string().nullable() })
      .nullable(),
    localRunIds: z.array(z.string()).readonly(),
    recoveryPending: z.boolean(),
    lastReason: z.string().nullable(),
    waitingFor: z
      .string()
      .nullable()
      .describe("while queued: why the run waits (waiting-for-key <key> n/limit, rate-limited until <time>, …)"),
    priority: z.number().describe("the priority it was submitted with (0: none)"),
    dispatchFailures: z.number(),
    workerVersion: z
      .string()
      .nullable()
      .describe("the worker version the run is pinned to once started (moved by POST /v1/runs/:id/upgrade)"),
    dag: Json.nullable(),
    input: z.unknown().describe("the run's input as submitted (JSON), or null"),
    output: z.unknown().describe("the run's output once completed (its sink step's, or keyed by sink step), or null"),
    outputRef: Json.nullable().describe("where a large output is kept in the object store (read back into output)"),
  })
  .describe("the folded run aggregate");

export const StepAnswer = z.object({
  id: z.string(),
  kind: z.string(),
  dependsOn: z.array(z.string()).readonly(),
  state: z.enum(STEP_STATES),
  attempts: z.number(),
  durationMs: z.number().nullable(),
  lastError: z.string().nullable(),
  retryAt: z.string().nullable(),
  skip: z
    .object({ reason: z.string(), detail: z.string() })
    .nullable()
    .describe("why a skipped step did not run (condition-false, dependency-skipped)"),
  condition: z.boolean().nullable().describe("the step's when result as journaled; null without one"),
  reusedFrom: z
    .string()
    .nullable()
    .describe("a fork's step that did not execute: the run whose journaled output it reuses"),
  items: z
    .object({
      total: z.number().nullable().describe("items the map expanded into; null before it expanded"),
      completed: z.number(),
      failed: z.number().describe("items with no attempts left"),
      open: z.number().describe("items not settled: running, waiting for a slot or for a retry"),
    })
    .nullable()
    .describe("a map step's item counts from its journal; null for any other step"),
});

const UnreadableEvents = z
  .array(z.object({ seq: z.number(), subject: z.string(), error: z.string() }))
  .readonly()
  .describe("messages on the run's or its executions' subjects that are not valid events, left out of the answer");

export const RunDetailAnswer = RunViewAnswer.extend({
  labels: z.record(z.string(), z.string()),
  unreadableEvents: UnreadableEvents,
  rerunOf: z.string().nullable(),
  forkedFrom: z
    .object({ sharedRunId: z.string(), fromStep: z.string(), executionId: z.string().nullable() })
    .nullable()
    .describe("the run this one forks (POST /v1/runs/:id/fork) and the step it executes from"),
  forks: z
    .array(z.object({ sharedRunId: z.string(), fromStep: z.string() }))
    .readonly()
    .describe("forks of this run, in the order they were made"),
  parent: z
    .object({ sharedRunId: z.string(), executionId: z.string(), stepId: z.string(), onParentCancel: z.string() })
    .nullable()
    .describe('the run step whose child run this is (docs/control-flow.md "Child runs")'),
  children: z
    .array(z.object({ sharedRunId: z.string(), stepId: z.string(), attempt: z.number() }))
    .readonly()
    .describe("child runs this run's run steps submitted"),
  cancelRequested: z.object({ by: z.string(), reason: z.string(), seq: z.number() }).nullable(),
  steps: z.array(StepAnswer).readonly(),
  waits: z
    .array(
      z.object({
        stepId: z.string(),
        name: z.string(),
        state: z.enum(["pending", "open", "resolved", "timed-out", "superseded", "skipped", "ended"]),
        timeoutAt: z.string().nullable(),
        onTimeout: z.enum(["fail", "continue"]),
        resolvers: z.array(z.string()).readonly().nullable(),
        schema: z.record(z.string(), z.unknown()).nullable(),
        signal: z
          .object({ by: z.string(), payloadDigest: z.string(), signalId: z.string().nullable(), seq: z.number() })
          .nullable(),
      }),
    )
    .readonly()
    .describe("the run's wait steps and the signal each got (POST /v1/runs/:id/signals/:name)"),
});

export const RunListAnswer = z.object({
  runs: z.array(RunSummary),
  next: z.string().optional().describe("cursor of the next (older) page; absent on the last page"),
  asOf: z.number().describe("the stream sequence the read models include"),
});

export const RunEventsAnswer = z.object({
  events: z.array(z.object({ seq: z.number(), subject: z.string(), time: z.string(), event: Json })),
  unreadableEvents: UnreadableEvents,
});

export const UpgradeAnswer = z.object({
  outcome: z
    .enum(["upgraded", "already-on-version"])
    .describe("upgraded: run.upgraded appended now; already-on-version: the run is pinned to that version"),
  fromVersion: z.string().nullable().describe("the version the run was pinned to (null when already on it)"),
  toVersion: z.string(),
  kinds: z.array(z.string()).describe("the remaining steps' kinds the target version offers"),
  run: RunDetailAnswer,
});

export const CancelAnswer = z.object({
  outcome: z
    .enum(["requested", "already-requested", "cancelled"])
    .describe("202 requested now or before; 200 the run is already cancelled"),
  run: RunDetailAnswer,
});
