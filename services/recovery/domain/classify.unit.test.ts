import { describe, expect, it } from "vitest";
import type { DroverEvent, EventType } from "../../../contracts/index.ts";
import { ForensicsId, parseEvent, SharedRunId, TenantId } from "../../../contracts/index.ts";
import { foldRun } from "../../../aggregates/run.ts";
import { EXAMPLE_BUILDERS, ids } from "../../../test/support/example-events.ts";
import { classifyInventory, forensicsIdOf, type InventoryRun } from "./classify.ts";
import { recoveryTransition } from "./transitions.ts";

const FAILED = ids.runtime;
const OTHER = ids.replacementRuntime;

/** A run of `tenant` whose history is the given event types, placed on `runtime`. */
function run(tenantId: string, sharedRunId: string, runtime: string, ...types: EventType[]): InventoryRun {
  const events = types.map((t, i) => {
    const e = EXAMPLE_BUILDERS[t]() as DroverEvent & { data: Record<string, unknown> };
    const data = "runtimeInstanceId" in e.data ? { ...e.data, runtimeInstanceId: runtime } : e.data;
    return { seq: i + 1, event: { ...e, tenantId, data } as DroverEvent };
  });
  return { tenantId: TenantId.parse(tenantId), sharedRunId: SharedRunId.parse(sharedRunId), state: foldRun(events) };
}

describe("recovery classification (given/when/then; proves no transport)", () => {
  const inventory = [
    run("tenant-a", "run-inflight", FAILED, "run.submitted", "run.admitted", "run.dispatched", "run.started"),
    run("tenant-a", "run-queued-1", FAILED, "run.submitted", "run.admitted", "run.dispatched"),
    run("tenant-b", "run-queued-0", FAILED, "run.submitted", "run.admitted"),
    run(
      "tenant-a",
      "run-done",
      FAILED,
      "run.submitted",
      "run.admitted",
      "run.dispatched",
      "run.started",
      "run.completed",
    ),
    run("tenant-safe", "run-safe", OTHER, "run.submitted", "run.admitted", "run.dispatched", "run.started"),
    run("tenant-c", "run-waiting", FAILED, "run.submitted", "run.queued-globally"),
  ];

  it("takes only unfinished runs whose latest placement is the failed runtime, in-flight first", () => {
    const items = classifyInventory(FAILED, inventory);
    expect(items.map((i) => [i.class, i.sharedRunId])).toEqual([
      ["in-flight-execution", "run-inflight"],
      ["local-queued", "run-queued-0"],
      ["local-queued", "run-queued-1"],
    ]);
  });

  it("keeps a tenant with no work on the failed runtime out of the inventory entirely", () => {
    expect(classifyInventory(FAILED, inventory).some((i) => i.tenantId === "tenant-safe")).toBe(false);
  });

  it("classifies a resume placement that died before it began as in-flight again (recovery of recovery)", () => {
    const r = run(
      "tenant-a",
      "run-rr",
      FAILED,
      "run.submitted",
      "run.admitted",
      "run.dispatched",
      "run.started",
      "run.requeued-for-resume",
      "run.admitted",
      "run.dispatched",
    );
    const [item] = classifyInventory(FAILED, [r]);
    expect(item).toMatchObject({ class: "in-flight-execution", executionId: ids.execution });
  });

  it("builds deterministic ForensicsIds in the documented shapes", () => {
    const [inflight, queued] = classifyInventory(FAILED, inventory);
    expect(ForensicsId.safeParse(forensicsIdOf(inflight!)).success).toBe(true);
    expect(forensicsIdOf(inflight!)).toBe(`runtime-recovery:${ids.execution}:run-inflight:${ids.localRun}`);
    expect(forensicsIdOf(queued!)).toBe(`runtime-recovery:local-queued:run-queued-0:${ids.localRun}`);
  });
});

describe("recovery transitions (pure; proves no transport)", () => {
  const [inflight, queued] = classifyInventory(FAILED, [
    run("tenant-a", "run-inflight", FAILED, "run.submitted", "run.admitted", "run.dispatched", "run.started"),
    run("tenant-a", "run-queued", FAILED, "run.submitted", "run.admitted", "run.dispatched"),
  ]);
  const ctx = {
    incidentId: ids.incident,
    failedRuntimeInstanceId: FAILED,
    exec: { lastSeq: 40, epoch: 1, completedSteps: 25 },
  };

  it("pauses the execution with a new epoch, requeues the run for resume and opens the forensics record, each at its expected sequence", () => {
    const t = recoveryTransition(inflight!, ctx);
    expect(t.map((a) => [a.aggregate, a.expectedSeq, a.events.map((e) => e.type)])).toEqual([
      ["exec", 40, ["exec.paused-for-recovery"]],
      ["run", 4, ["run.requeued-for-resume"]],
      [
        "forensics",
        0,
        [
          "forensics.execution-recovery-candidate-detected",
          "forensics.failed-local-run-marked-requeued-for-recovery",
          "forensics.shared-run-requeued-for-resume",
        ],
      ],
    ]);
    expect(t[0]!.events[0]!.data).toMatchObject({ newEpoch: 2 });
  });

  it("given an execution whose journal already ended (its host died before the run's terminal event), when recovered, then nothing is appended to the journal and the run alone moves to the next epoch", () => {
    const t = recoveryTransition(inflight!, { ...ctx, exec: { ...ctx.exec!, terminal: true } });
    expect(t.map((a) => [a.aggregate, a.expectedSeq, a.events.map((e) => e.type)])).toEqual([
      ["run", 4, ["run.requeued-for-resume"]],
      [
        "forensics",
        0,
        [
          "forensics.execution-recovery-candidate-detected",
          "forensics.failed-local-run-marked-requeued-for-recovery",
          "forensics.shared-run-requeued-for-resume",
        ],
      ],
    ]);
    expect(t[0]!.events[0]!.data).toMatchObject({ newEpoch: 2 });
  });

  it("given one crash more than the tenant allows, when recovered, then the execution is paused (its last owner fenced), the run fails with crash-loop naming the incidents, and the forensics record says failed", () => {
    const crashLoop = { crashes: 4, limit: 3, incidents: ["inc-1", "inc-2", "inc-3", String(ids.incident)] };
    const t = recoveryTransition(inflight!, { ...ctx, crashLoop });
    expect(t.map((a) => [a.aggregate, a.expectedSeq, a.events.map((e) => e.type)])).toEqual([
      ["exec", 40, ["exec.paused-for-recovery"]],
      ["run", 4, ["run.failed"]],
      ["forensics", 0, ["forensics.execution-recovery-candidate-detected", "forensics.execution-recovery-completed"]],
    ]);
    expect(t[1]!.events[0]!.data).toMatchObject({
      reason: {
        code: "crash-loop",
        detail: expect.stringContaining("crashed its runtime 4 times (incidents inc-1, inc-2, inc-3"),
      },
    });
    expect(t[2]!.events[1]!.data).toMatchObject({ outcome: "failed" });
    for (const agg of t)
      for (const e of agg.events)
        expect(() =>
          parseEvent({ ...EXAMPLE_BUILDERS[e.type as EventType](), tenantId: agg.tenantId, data: e.data }),
        ).not.toThrow();
  });

  it("given a started run whose execution journal is empty, when recovered, then nothing is appended to the journal and the run moves to epoch 1", () => {
    const t = recoveryTransition(inflight!, { ...ctx, exec: { lastSeq: 0, epoch: 0, completedSteps: 0 } });
    expect(t.map((a) => a.aggregate)).toEqual(["run", "forensics"]);
    expect(t[0]!.events[0]!.data).toMatchObject({ newEpoch: 1 });
  });

  it("requeues a never-started run for redispatch without touching any execution", () => {
    const t = recoveryTransition(queued!, ctx);
    expect(t.map((a) => a.aggregate)).toEqual(["run", "forensics"]);
    expect(t[0]!.events.map((e) => e.type)).toEqual(["run.requeued-for-local-queued-recovery"]);
  });

  it("produces event bodies that are valid against the catalogue", () => {
    for (const agg of [...recoveryTransition(inflight!, ctx), ...recoveryTransition(queued!, ctx)]) {
      for (const e of agg.events) {
        const env = { ...EXAMPLE_BUILDERS[e.type as EventType](), tenantId: agg.tenantId, data: e.data };
        expect(() => parseEvent(env)).not.toThrow();
      }
    }
  });

  it("refuses to build an in-flight transition without the execution's journal state", () => {
    expect(() => recoveryTransition(inflight!, { incidentId: ids.incident, failedRuntimeInstanceId: FAILED })).toThrow(
      /journal state/,
    );
  });
});
