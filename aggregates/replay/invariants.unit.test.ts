import { describe, expect, it } from "vitest";
import type { DroverEvent } from "../../contracts/index.ts";
import { recordedLog, sha256Hex as digest } from "../../test/support/recorded-logs.ts";
import { validateIncident, validateRunLog, type RecordedEvent, type ValidationResult } from "../replay-validation.ts";

// Unit: each invariant's boundary, shown by changing ONE fact of a sound recorded log.
const clean = recordedLog("run-clean.jsonl");
const crash = recordedLog("run-crash-resume.jsonl");

const at = (log: readonly RecordedEvent[], p: (e: DroverEvent) => boolean): RecordedEvent => {
  const r = log.find((x) => p(x.event));
  if (!r) throw new Error("anchor not in fixture");
  return r;
};
const patch = (
  log: readonly RecordedEvent[],
  target: RecordedEvent,
  data: object,
  extra: Partial<DroverEvent> = {},
): RecordedEvent[] =>
  log.map((r) =>
    r === target
      ? { ...r, event: { ...r.event, ...extra, data: { ...(r.event.data as object), ...data } } as DroverEvent }
      : r,
  );
const drop = (log: readonly RecordedEvent[], p: (r: RecordedEvent) => boolean) => log.filter((r) => !p(r));
const stepOf = (e: DroverEvent) => (e.data as { stepId?: string }).stepId;
const first = (r: ValidationResult) =>
  r.kind === "divergence" ? { invariant: r.divergence.invariant, seq: r.divergence.seq } : "match";

describe("execution invariants", () => {
  it("exec.completed while a step is incomplete diverges: the scheduler re-run over the journal would still start it", () => {
    const d = at(clean, (e) => e.type === "exec.step-completed" && stepOf(e) === "d");
    expect(
      first(
        validateRunLog(
          "run-clean",
          drop(clean, (r) => r === d),
          { digest },
        ),
      ),
    ).toEqual({ invariant: "scheduler-divergence", seq: 20 });
  });

  it("a recorded compute output that does not re-derive from its dependencies' recorded outputs diverges at that step", () => {
    const b = at(clean, (e) => e.type === "exec.step-completed" && stepOf(e) === "b");
    const log = patch(clean, b, {
      output: { digest: "f".repeat(64) },
      outputDigest: digest(JSON.stringify({ digest: "f".repeat(64) })),
    });
    expect(first(validateRunLog("run-clean", log, { digest }))).toEqual({
      invariant: "output-rederivation",
      seq: b.seq,
    });
    // Without a digest function the caller opted out of re-derivation; the scheduler checks still hold.
    expect(first(validateRunLog("run-clean", log))).toBe("match");
  });

  it("a flaky step that completes at an attempt the journal has not reached diverges (attempts continue one by one)", () => {
    const c = at(clean, (e) => e.type === "exec.step-completed" && stepOf(e) === "c");
    expect(first(validateRunLog("run-clean", patch(clean, c, { attempt: 3 })))).toEqual({
      invariant: "scheduler-divergence",
      seq: c.seq,
    });
  });

  it("a durable timer for a step that is not a sleep step diverges at the timer", () => {
    const b = at(clean, (e) => e.type === "exec.step-completed" && stepOf(e) === "b");
    const timer = {
      ...b,
      event: {
        ...b.event,
        type: "exec.timer-started",
        eventId: "ev-timer",
        data: { stepId: "b", attempt: 1, durationMs: 5, wakeAt: b.event.occurredAt },
      } as DroverEvent,
    };
    const log = [
      ...clean.filter((r) => r.seq < b.seq),
      timer,
      ...clean.filter((r) => r.seq >= b.seq).map((r) => ({ ...r, seq: r.seq + 1 })),
    ];
    expect(first(validateRunLog("run-clean", log))).toEqual({ invariant: "scheduler-divergence", seq: b.seq });
  });

  it("a step the DAG does not have, a write after exec.completed and a DAG digest other than the submitted DAG's each diverge", () => {
    const b = at(clean, (e) => e.type === "exec.step-completed" && stepOf(e) === "b");
    expect(first(validateRunLog("run-clean", patch(clean, b, { stepId: "zz" })))).toEqual({
      invariant: "unknown-step",
      seq: b.seq,
    });
    const done = at(clean, (e) => e.type === "exec.completed");
    const late = { ...b, seq: done.seq + 1, event: { ...b.event, eventId: "ev-late" } as DroverEvent };
    const after = [
      ...clean.filter((r) => r.seq <= done.seq),
      late,
      ...clean.filter((r) => r.seq > done.seq).map((r) => ({ ...r, seq: r.seq + 1 })),
    ];
    expect(first(validateRunLog("run-clean", after))).toEqual({ invariant: "write-after-terminal", seq: done.seq + 1 });
    const started = at(clean, (e) => e.type === "exec.started");
    expect(
      first(validateRunLog("run-clean", patch(clean, started, { dagDigest: "0".repeat(64) }), { digest })),
    ).toEqual({ invariant: "dag-digest", seq: started.seq });
  });

  it("an unfinished journal matches and says it is in flight", () => {
    const done = at(clean, (e) => e.type === "exec.completed");
    const r = validateRunLog(
      "run-clean",
      clean.filter((x) => x.seq < done.seq),
      { digest },
    );
    expect(r).toMatchObject({ kind: "match" });
    expect(r.kind === "match" && r.notes.some((n) => n.includes("in flight"))).toBe(true);
  });
});

describe("run invariants: recovery keeps the right identities", () => {
  it("a run.started by a LocalRunId other than the latest dispatch diverges (a requeued run cannot be started by the old runtime)", () => {
    const s = at(clean, (e) => e.type === "run.started");
    expect(first(validateRunLog("run-clean", patch(clean, s, { localRunId: "lr-other" })))).toEqual({
      invariant: "started-without-dispatch",
      seq: s.seq,
    });
  });

  it("requeued-for-local-queued-recovery of a run whose execution started is a misclassification", () => {
    const rq = at(crash, (e) => e.type === "run.requeued-for-resume");
    const log = crash.map((r) =>
      r === rq
        ? {
            ...r,
            event: {
              ...r.event,
              type: "run.requeued-for-local-queued-recovery",
              data: {
                forensicsId: "runtime-recovery:local-queued:run-fixture:lr-fixture-1",
                incidentId: "inc-rt-fixture-a",
                failedRuntimeInstanceId: "rt-fixture-a",
                failedLocalRunId: "lr-fixture-1",
              },
            } as DroverEvent,
          }
        : r,
    );
    expect(validateRunLog("run-fixture", log)).toMatchObject({
      kind: "divergence",
      divergence: { invariant: "misclassified-recovery", seq: rq.seq },
    });
  });

  it("requeued-for-resume of a run that never started is a misclassification", () => {
    const rq = at(crash, (e) => e.type === "run.requeued-for-local-queued-recovery");
    const log = crash.map((r) =>
      r === rq
        ? {
            ...r,
            event: {
              ...r.event,
              type: "run.requeued-for-resume",
              data: { ...(r.event.data as object), executionId: "exec-never", newEpoch: 1 },
            } as DroverEvent,
          }
        : r,
    );
    expect(validateRunLog("run-fixture-q", log)).toMatchObject({
      kind: "divergence",
      divergence: { invariant: "misclassified-recovery", seq: rq.seq },
    });
  });

  it("a local-queued redispatch under the failed LocalRunId diverges at its admission", () => {
    const adm = crash
      .filter((r) => r.event.type === "run.admitted" && r.subject.includes(".run-fixture-q."))
      .at(-1) as RecordedEvent;
    const log = crash.map((r) =>
      r.subject.includes(".run-fixture-q.") &&
      r.seq >= adm.seq &&
      r.event.type.startsWith("run.") &&
      "localRunId" in (r.event.data as object)
        ? {
            ...r,
            event: { ...r.event, data: { ...(r.event.data as object), localRunId: "lr-fixture-q-1" } } as DroverEvent,
          }
        : r,
    );
    expect(first(validateRunLog("run-fixture-q", log))).toEqual({
      invariant: "redispatch-reused-local-run",
      seq: adm.seq,
    });
  });
});

describe("incident invariants", () => {
  it("work moved before fenced diverges at the first move", () => {
    const fenced = at(crash, (e) => e.type === "runtime.fenced");
    const paused = at(crash, (e) => e.type === "exec.paused-for-recovery");
    const log = crash.filter((r) => r !== fenced).concat([{ ...fenced, seq: 1000 }]);
    expect(first(validateIncident("inc-rt-fixture-a", log))).toEqual({
      invariant: "work-moved-before-fenced",
      seq: paused.seq,
    });
  });

  it("a tenant's view of an incident judges only its own items: another tenant's missing forensics is not reported to it", () => {
    const log = recordedLog("run-defect-missing-forensics.jsonl");
    expect(first(validateIncident("inc-rt-fixture-a", log, "t-other"))).toBe("match");
    expect(first(validateIncident("inc-rt-fixture-a", log, "t-fixture"))).toEqual({
      invariant: "missing-forensics-record",
      seq: 28,
    });
  });

  // The same recorded recovery, as it looks after a planned stop (host-stopped): no suspected, a
  // `retired` with the kill's proof where `fenced` was, and the `stop-…` id where the incident id was.
  const asPlannedStop = (log: readonly RecordedEvent[], retiredSeq?: number): RecordedEvent[] =>
    log.flatMap((r): RecordedEvent[] => {
      if (r.event.type === "runtime.suspected") return [];
      const renamed = JSON.parse(JSON.stringify(r.event).replaceAll("inc-rt-fixture-a", "stop-rt-fixture-a"));
      if (r.event.type !== "runtime.fenced") return [{ ...r, event: renamed as DroverEvent }];
      const retired = {
        ...renamed,
        type: "runtime.retired",
        data: {
          reason: "host-stopped: provisioner stopped",
          stopped: {
            stopId: "stop-rt-fixture-a",
            reason: { code: "host-stopped", detail: "provisioner stopped" },
            hostIncarnation: r.event.data.hostIncarnation,
            proof: r.event.data.proof,
          },
        },
      } as DroverEvent;
      return [
        {
          ...r,
          subject: r.subject.replace(/fenced$/, "retired"),
          ...(retiredSeq ? { seq: retiredSeq } : {}),
          event: retired,
        },
      ];
    });

  it("a planned stop's moves are judged against the retirement that carries its proof: after it they match, before it they diverge", () => {
    const paused = at(crash, (e) => e.type === "exec.paused-for-recovery");
    expect(first(validateIncident("stop-rt-fixture-a", asPlannedStop(crash)))).toBe("match");
    const late = asPlannedStop(crash, 1000).sort((a, b) => a.seq - b.seq);
    expect(first(validateIncident("stop-rt-fixture-a", late))).toEqual({
      invariant: "work-moved-before-fenced",
      seq: paused.seq,
    });
  });
});
