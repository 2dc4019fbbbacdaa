/**
 * Composes the replay-validation fixtures in test/fixtures (run once; it refuses to overwrite a
 * fixture, because old fixtures are never edited — a new case gets a new file).
 *
 *   npx tsx test/support/compose-replay-fixtures.ts
 *
 * Provenance, stated in every file name's README line (test/fixtures/README.md):
 * - `run-crash-resume.jsonl` embeds, event for event (ids, writers, data, order), the execution
 *   journal RECORDED from two real runtime processes (exec-journal-sigkill-resumed.jsonl); the run,
 *   runtime, recovery and forensics events around it are composed from the contracts in the shapes
 *   the services write (recovery's atomic transition, admission's placement), renumbered 1..N.
 * - `run-clean.jsonl` is composed: outputs and digests are computed as the runtime computes them,
 *   so output re-derivation holds.
 * - each `run-defect-*.jsonl` is one of those two logs with exactly one defect injected.
 */
import { readFileSync } from "node:fs";
import { DagDefinition, parseEvent, type DagInput, type DroverEvent } from "../../contracts/index.ts";
import { exampleEvent } from "./example-events.ts";
import {
  DIR,
  execIdOf,
  execute,
  Log,
  placeAndStart,
  PREFIX,
  rtWriter,
  runtimeUp,
  svc,
  TENANT,
  write,
  type Line,
} from "./fixture-log.ts";

const cleanDagInput: DagInput = {
  name: "clean",
  steps: [
    { id: "a", kind: "compute", params: { durationMs: 5 } },
    { id: "b", kind: "compute", dependsOn: ["a"], params: { durationMs: 5 } },
    {
      id: "c",
      kind: "flaky",
      dependsOn: ["a"],
      params: { durationMs: 5, failAttempts: 1 },
      retry: { maxAttempts: 2, backoffMs: 10 },
    },
    { id: "d", kind: "compute", dependsOn: ["b", "c"], params: { durationMs: 5 } },
  ],
};

function cleanRun(): Line[] {
  const log = new Log("clean", "2026-12-01T10:00:00.000Z");
  const dag = DagDefinition.parse(cleanDagInput);
  const run = "run-clean",
    rt = "rt-clean-a",
    inc = "pid:31001:500100",
    so = "so-clean-1";
  log.add("run.submitted", run, { sharedRunId: run, dag, source: "api", labels: {} }, svc("api"), {
    correlationId: run,
  });
  log.add(
    "run.queued-globally",
    run,
    {
      reason: { code: "no-visible-capacity", detail: "0 candidates: tenant t-fixture is dedicated and has no runtime" },
    },
    svc("admission"),
    { correlationId: run },
  );
  log.add("run.scale-out-requested", run, { requestId: so }, svc("admission"), { correlationId: run });
  const req = exampleEvent("scaleout.requested").data;
  log.add(
    "scaleout.requested",
    so,
    {
      ...req,
      requestId: so,
      controlPlaneId: "cp-fixture",
      dedupeKey: "cp-fixture/t-fixture/rt-clean/no-visible-capacity",
      policy: { ...req.policy, runtimeInstanceIdPrefix: "rt-clean" },
    },
    svc("admission"),
    { correlationId: run },
  );
  log.add("scaleout.observed", so, { provisionerInstanceId: "provisioner-1" }, svc("provisioner"));
  runtimeUp(log, rt, 31001, inc, so);
  log.add("scaleout.fulfilled", so, { runtimeInstanceId: rt }, svc("provisioner"));
  const executionId = placeAndStart(log, run, rt, "lr-clean-1", inc, 0, {
    why: "dedicated to t-fixture; 2 free run slots",
  });
  execute(log, run, "lr-clean-1", executionId, dag, rt, inc);
  return log.lines;
}

function recorded(): Line[] {
  return readFileSync(`${DIR}/exec-journal-sigkill-resumed.jsonl`, "utf8")
    .trim()
    .split("\n")
    .map((l) => JSON.parse(l) as Line)
    .map((l) => ({ ...l, event: parseEvent(l.event) }));
}

function crashResumeRun(): Line[] {
  const log = new Log("crash", "2026-11-29T19:04:15.000Z");
  const dag = DagDefinition.parse(JSON.parse(readFileSync(`${DIR}/exec-journal-sigkill-resumed.dag.json`, "utf8")));
  const journal = recorded();
  const execSubject = (l: Line) =>
    `${PREFIX}.exec.${TENANT}.${l.subject.split(".").at(-2)}.${l.event.type.split(".")[1]}`;
  const before = journal.filter((l) => l.seq <= 12),
    paused = journal.find((l) => l.seq === 13) as Line,
    after = journal.filter((l) => l.seq >= 18);
  const run = "run-fixture",
    q = "run-fixture-q",
    rtA = "rt-fixture-a",
    rtB = "rt-fixture-b",
    incA = "pid:20114:200998",
    incB = "pid:20156:201110";
  const incident = "inc-rt-fixture-a";
  log.add("run.submitted", run, { sharedRunId: run, dag, source: "api", labels: {} }, svc("api"), {
    correlationId: run,
  });
  runtimeUp(log, rtA, 20114, incA);
  const executionId = placeAndStart(log, run, rtA, "lr-fixture-1", incA, 0, {
    why: "dedicated to t-fixture; 2 free run slots",
  });
  for (const l of before) log.push(l.event, execSubject(l));
  // A second run was dispatched to A but never started: the local-queued class of the same incident.
  const qDag = DagDefinition.parse({
    name: "queued",
    steps: [{ id: "only", kind: "compute", params: { durationMs: 5 } }],
  });
  log.add("run.submitted", q, { sharedRunId: q, dag: qDag, source: "api", labels: {} }, svc("api"), {
    correlationId: q,
  });
  log.add(
    "run.admitted",
    q,
    {
      runtimeInstanceId: rtA,
      localRunId: "lr-fixture-q-1",
      reservationId: "res-lr-fixture-q-1",
      candidates: [{ runtimeInstanceId: rtA, rank: 0, why: "dedicated to t-fixture; 1 free run slot" }],
      recovery: false,
    },
    svc("admission"),
    { correlationId: q },
  );
  log.add(
    "run.dispatched",
    q,
    { runtimeInstanceId: rtA, localRunId: "lr-fixture-q-1", transport: "http", hostIncarnation: incA },
    svc("admission"),
    { correlationId: q },
  );
  log.add(
    "runtime.host-exited",
    rtA,
    { hostIncarnation: incA, kind: "exited", exitCode: null, signal: "SIGKILL", detail: "child exit observed" },
    svc("provisioner"),
  );
  log.add(
    "runtime.suspected",
    rtA,
    {
      incidentId: incident,
      reason: { code: "host-exited", detail: "process exit observed (SIGKILL)" },
      hostIncarnation: incA,
    },
    svc("recovery"),
    { correlationId: incident },
  );
  log.add(
    "runtime.fenced",
    rtA,
    {
      incidentId: incident,
      hostIncarnation: incA,
      proof: { kind: "process-exit", pid: 20114, exitCode: null, signal: "SIGKILL" },
    },
    svc("recovery"),
    { correlationId: incident },
  );
  // recovery's atomic batch for the in-flight item: exec paused (the recorded event), run requeued, forensics.
  const fxIn = (paused.event.data as { forensicsId: string }).forensicsId;
  log.push(paused.event, execSubject(paused));
  const r = svc("recovery"),
    rc = { correlationId: incident, causationId: `recovery:${incident}` };
  log.add(
    "run.requeued-for-resume",
    run,
    {
      forensicsId: fxIn,
      incidentId: incident,
      executionId,
      failedRuntimeInstanceId: rtA,
      failedLocalRunId: "lr-fixture-1",
      newEpoch: 1,
    },
    r,
    rc,
  );
  const itemIn = {
    forensicsId: fxIn,
    incidentId: incident,
    class: "in-flight-execution",
    sharedRunId: run,
    failedRuntimeInstanceId: rtA,
    failedLocalRunId: "lr-fixture-1",
    executionId,
  };
  log.add("forensics.execution-recovery-candidate-detected", fxIn, { ...itemIn, completedSteps: 5 }, r, rc);
  log.add("forensics.failed-local-run-marked-requeued-for-recovery", fxIn, itemIn, r, rc);
  log.add("forensics.shared-run-requeued-for-resume", fxIn, { ...itemIn, newEpoch: 1 }, r, rc);
  const fxQ = `runtime-recovery:local-queued:${q}:lr-fixture-q-1`;
  const itemQ = {
    forensicsId: fxQ,
    incidentId: incident,
    class: "local-queued",
    sharedRunId: q,
    failedRuntimeInstanceId: rtA,
    failedLocalRunId: "lr-fixture-q-1",
  };
  log.add(
    "run.requeued-for-local-queued-recovery",
    q,
    { forensicsId: fxQ, incidentId: incident, failedRuntimeInstanceId: rtA, failedLocalRunId: "lr-fixture-q-1" },
    r,
    rc,
  );
  log.add("forensics.execution-recovery-candidate-detected", fxQ, itemQ, r, rc);
  log.add("forensics.failed-local-run-marked-requeued-for-recovery", fxQ, itemQ, r, rc);
  log.add("forensics.shared-run-requeued-for-local-queued-recovery", fxQ, itemQ, r, rc);
  log.add(
    "runtime.recovery-planned",
    rtA,
    {
      incidentId: incident,
      items: [
        {
          forensicsId: fxIn,
          tenantId: TENANT,
          sharedRunId: run,
          localRunId: "lr-fixture-1",
          executionId,
          class: "in-flight-execution",
        },
        { forensicsId: fxQ, tenantId: TENANT, sharedRunId: q, localRunId: "lr-fixture-q-1", class: "local-queued" },
      ],
    },
    r,
    rc,
  );
  runtimeUp(log, rtB, 20156, incB);
  placeAndStart(log, run, rtB, "lr-fixture-2", incB, 1, {
    executionId,
    why: "recovery item, placed ahead of new work; 2 free run slots",
    recovery: true,
  });
  log.add("forensics.dag-resume-started", fxIn, { ...itemIn, replacementRuntimeInstanceId: rtB, epoch: 1 }, r, rc);
  for (const l of after) log.push(l.event, execSubject(l));
  const done = after.find((l) => l.event.type === "exec.completed")?.event.data as { outputDigest: string };
  log.add(
    "run.completed",
    run,
    { executionId, localRunId: "lr-fixture-2", outputDigest: done.outputDigest },
    rtWriter(rtB, incB, 1),
    { correlationId: run, causationId: "local-run:lr-fixture-2" },
  );
  log.add("forensics.execution-recovery-completed", fxIn, { ...itemIn, outcome: "completed" }, r, rc);
  const qExec = placeAndStart(log, q, rtB, "lr-fixture-q-2", incB, 0, {
    why: "recovery item, placed ahead of new work; 1 free run slot",
    recovery: true,
  });
  execute(log, q, "lr-fixture-q-2", qExec, qDag, rtB, incB);
  log.add("forensics.execution-recovery-completed", fxQ, { ...itemQ, outcome: "completed" }, r, rc);
  return log.lines;
}

/** Inserts `line` so it becomes the event right after position `after` (1-based, as in the source log). */
const insertAfter = (lines: readonly Line[], after: number, line: Line): Line[] => [
  ...lines.slice(0, after),
  line,
  ...lines.slice(after),
];
const find = (lines: readonly Line[], p: (l: Line) => boolean): Line => {
  const l = lines.find(p);
  if (!l) throw new Error("fixture anchor missing");
  return l;
};
const step = (l: Line, type: string, stepId: string) =>
  l.event.type === type && (l.event.data as { stepId?: string }).stepId === stepId;
const with_ = (l: Line, patch: Partial<DroverEvent>): Line => ({ ...l, event: parseEvent({ ...l.event, ...patch }) });

const clean = cleanRun(),
  crash = crashResumeRun();
write("run-clean.jsonl", clean);
write("run-crash-resume.jsonl", crash);

// A retried append that landed twice (no msg-id dedupe): a second step-completed for b after c.
const b = find(clean, (l) => step(l, "exec.step-completed", "b"));
const c = find(clean, (l) => step(l, "exec.step-completed", "c"));
write(
  "run-defect-duplicate-step-completed.jsonl",
  insertAfter(clean, c.seq, with_(b, { eventId: "ev-clean-dup-b" } as Partial<DroverEvent>)),
);

// d completes before its dependency c: c's completion moved after d's.
const d = find(clean, (l) => step(l, "exec.step-completed", "d"));
write("run-defect-step-before-dependency.jsonl", [
  ...clean.filter((l) => l !== c && l.seq <= d.seq),
  c,
  ...clean.filter((l) => l.seq > d.seq),
]);

// A second run.completed for the same SharedRunId.
const runDone = find(clean, (l) => l.event.type === "run.completed");
write("run-defect-duplicate-run-completed.jsonl", [
  ...clean,
  with_(runDone, { eventId: "ev-clean-dup-run-completed" } as Partial<DroverEvent>),
]);

// The old owner (epoch 0) writes after paused-for-recovery, before the replacement resumed.
const tail2 = find(crash, (l) => step(l, "exec.step-failed", "tail-2"));
const requeued = find(crash, (l) => l.event.type === "run.requeued-for-resume");
write(
  "run-defect-stale-epoch-write.jsonl",
  insertAfter(
    crash,
    requeued.seq,
    with_(tail2, {
      eventId: "ev-crash-stale-tail-2",
      data: { ...(tail2.event.data as object), attempt: 2, error: "flaky step fails attempt 2 of the first 2" },
    } as Partial<DroverEvent>),
  ),
);

// The fenced incarnation writes after fenced (before recovery moved anything: the log alone cannot refuse it).
const fenced = find(crash, (l) => l.event.type === "runtime.fenced");
write(
  "run-defect-write-after-fenced.jsonl",
  insertAfter(
    crash,
    fenced.seq,
    with_(tail2, {
      eventId: "ev-crash-zombie-tail-2",
      data: { ...(tail2.event.data as object), attempt: 2, error: "flaky step fails attempt 2 of the first 2" },
    } as Partial<DroverEvent>),
  ),
);

// The resume creates a second execution instead of continuing the same ExecutionId.
const resumeStart = find(
  crash,
  (l) => l.event.type === "run.started" && (l.event.data as { localRunId: string }).localRunId === "lr-fixture-2",
);
write(
  "run-defect-resume-new-execution.jsonl",
  crash.map((l) =>
    l === resumeStart
      ? with_(l, {
          data: { ...(l.event.data as object), executionId: execIdOf("run-fixture", "lr-fixture-2") },
        } as Partial<DroverEvent>)
      : l,
  ),
);

// The local-queued item's forensics record is missing.
write(
  "run-defect-missing-forensics.jsonl",
  crash.filter(
    (l) => !(l.event.type.startsWith("forensics.") && (l.event.data as { class: string }).class === "local-queued"),
  ),
);
