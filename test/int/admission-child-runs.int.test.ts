import { jetstream } from "@nats-io/jetstream";
import { pino } from "pino";
import { afterEach, beforeEach, describe, expect, inject, it } from "vitest";
import { DagDefinition, RuntimeInstanceId, StepId, type DroverEvent, type EventOf } from "../../contracts/index.ts";
import { randomIds, systemClock } from "../../platform/envelope.ts";
import { childIds, startChildRuns } from "../../services/admission/index.ts";
import { createEventStore, execRef, runRef, type AggregateRef, type EventStore } from "../../streams/index.ts";
import { ids, runtimeWriter } from "../support/example-events.ts";
import { event, eventually, freshStreams, type StreamsFixture } from "../support/streams.ts";

/**
 * Admission's side of child runs (docs/control-flow.md "Child runs") against a real nats-server:
 * a runtime only journals `exec.child-run-submitted`; admission submits the child, once, and
 * cancels it when the parent's run step attempt fails or the parent run ends failed.
 */
const childDag = { steps: [{ id: "c1", kind: "compute" }] };
const runStep = (id: string, onParentCancel: "cancel" | "abandon") => ({
  id,
  kind: "run",
  dag: childDag,
  onParentCancel,
});
const dag = DagDefinition.parse({
  steps: [runStep("a", "cancel"), runStep("b", "cancel"), runStep("k", "abandon"), runStep("t", "cancel")],
});

describe("admission submits and cancels run steps' child runs from the parents' journals (boundary: real nats-server + JetStream)", () => {
  let f: StreamsFixture;
  let store: EventStore;
  const stops: (() => Promise<void>)[] = [];
  beforeEach(async () => {
    f = await freshStreams(inject("natsUrl"), "child");
    store = createEventStore(f.nc, f.layout);
  });
  afterEach(async () => {
    for (const s of stops.splice(0)) await s();
    await f.close();
  });

  const put = async (ref: AggregateRef, e: DroverEvent) =>
    store.append(ref, e, { expectedSeq: await store.lastSeq(ref) });
  const parentRef = runRef(ids.tenant, ids.sharedRun);
  const exec = execRef(ids.tenant, ids.execution);
  const start = async () => {
    const follower = await startChildRuns({
      js: jetstream(f.nc),
      layout: f.layout,
      store,
      env: { writer: { service: "admission", instanceId: "adm-1" }, clock: systemClock, ids: randomIds },
      log: pino({ level: "silent" }),
    });
    stops.push(() => follower.stop());
    await follower.caughtUp;
    return follower;
  };
  const startParent = async () => {
    const submitted = event("run.submitted");
    await put(parentRef, { ...submitted, data: { ...submitted.data, dag } });
    for (const t of ["run.admitted", "run.dispatched", "run.started"] as const) await put(parentRef, event(t));
    await put(exec, event("exec.started"));
  };
  const decide = (stepId: string, attempt = 1, writer = runtimeWriter) =>
    put(exec, {
      ...event("exec.child-run-submitted"),
      writer,
      data: { stepId: StepId.parse(stepId), attempt, childRunId: childOf(stepId, attempt), input: { step: stepId } },
    });
  const childOf = (stepId: string, attempt = 1) =>
    childIds(ids.tenant, ids.execution, stepId, attempt).sharedRunId as EventOf<"run.submitted">["data"]["sharedRunId"];
  const history = async (stepId: string, attempt = 1) =>
    (await store.read(runRef(ids.tenant, childOf(stepId, attempt)))).events;
  const submittedChild = (stepId: string) =>
    eventually(`child of ${stepId} submitted`, async () => (await history(stepId))[0]?.event);

  it("submits the child once, as admission, with the parent DAG's child DAG and the journaled input; a restart submits no second; another runtime's decision submits nothing", async () => {
    await startParent();
    await decide("a");
    await start();
    const child = await submittedChild("a");
    expect(child.type).toBe("run.submitted");
    expect(child.writer.service).toBe("admission");
    expect(child.type === "run.submitted" && child.data).toMatchObject({
      sharedRunId: childOf("a"),
      dag: DagDefinition.parse(childDag),
      input: { step: "a" },
      source: "run-step",
      parent: {
        sharedRunId: ids.sharedRun,
        executionId: ids.execution,
        stepId: "a",
        attempt: 1,
        onParentCancel: "cancel",
      },
    });
    // A decision declared by a runtime the execution is not placed on, then a valid one after it.
    const elsewhere = { ...runtimeWriter, runtimeInstanceId: RuntimeInstanceId.parse("rt-elsewhere") };
    await decide("a", 2, elsewhere);
    await decide("b");
    await submittedChild("b");
    expect(await history("a", 2)).toEqual([]);
    // Restarted (a second follower from the start of the log): every child still submitted once.
    await start();
    for (const s of ["a", "b"]) expect((await history(s)).map((e) => e.event.type)).toEqual(["run.submitted"]);
  });

  it("cancels a cancel-mode child when its run step attempt fails (timeout) and when the parent run fails, by run:<parent>; an abandon child is left running", async () => {
    await startParent();
    await start();
    for (const s of ["t", "k", "a"]) await decide(s);
    for (const s of ["t", "k", "a"]) await submittedChild(s);
    await put(exec, {
      ...event("exec.step-failed"),
      writer: runtimeWriter,
      data: { stepId: "t", attempt: 1, error: "step t ran longer than its timeoutMs of 100", code: "step-timeout" },
    } as DroverEvent);
    const cancelOf = (s: string) =>
      eventually(`cancel of ${s}'s child`, async () => {
        const e = (await history(s)).find((x) => x.event.type === "run.cancel-requested")?.event;
        return e?.type === "run.cancel-requested" ? e : undefined;
      });
    const timedOut = await cancelOf("t");
    expect(timedOut.writer.service).toBe("admission");
    expect(timedOut.data.by).toBe(`run:${ids.sharedRun}`);
    expect(timedOut.data.reason).toMatch(/^run step t attempt 1 of parent run run-0001 failed: step-timeout/);
    expect((await history("a")).map((e) => e.event.type)).toEqual(["run.submitted"]);
    await put(parentRef, event("run.failed"));
    // Children are handled in decision order: k (abandon) before a, so a's cancel means k was passed over.
    expect((await cancelOf("a")).data.reason).toBe(`parent run ${ids.sharedRun} failed`);
    expect((await history("k")).map((e) => e.event.type)).toEqual(["run.submitted"]);
    expect((await history("t")).filter((e) => e.event.type === "run.cancel-requested")).toHaveLength(1);
  });
});
