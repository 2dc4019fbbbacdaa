import { describe, expect, it } from "vitest";
import { buildEvent, TenantId, type EventOrigin } from "../../../contracts/index.ts";
import { runRef } from "../../../streams/subjects.ts";
import { eventData } from "../../../test/support/event-data.ts";
import { MemoryEventStore } from "../../../test/support/memory-event-store.ts";
import { checkDispatched, readDispatchAhead } from "./execution-open.ts";
import { chain, eid, journalEnv, nextEventId, payload, T } from "./execution-fixtures.ts";

// Unit tier with an in-memory event store: proves the executor's decisions and fencing reactions,
// NOT any transport or JetStream behaviour (the host tier proves those against real processes).
describe("checkDispatched: run started only for this runtime's own dispatch (in-memory store; proves no transport)", () => {
  const ctx: EventOrigin = {
    tenantId: TenantId.parse(T),
    correlationId: "c1",
    causationId: "admission",
    writer: { service: "admission", instanceId: "adm-1" },
  };
  async function dispatched(store: MemoryEventStore, data: Record<string, unknown>): Promise<number> {
    const ref = runRef(T, "r1");
    const e = buildEvent(
      "run.dispatched",
      eventData("run.dispatched", { transport: "http", hostIncarnation: "pid:1:1", ...data }),
      ctx,
      {
        eventId: nextEventId(),
        now: new Date(0),
      },
    );
    return (await store.append(ref, e, { expectedSeq: await store.lastSeq(ref) })).seq;
  }

  it("given the run's dispatched event for this LocalRunId on this runtime, when checked, then it passes and writes nothing", async () => {
    const store = new MemoryEventStore();
    const seq = await dispatched(store, { runtimeInstanceId: "rt-a", localRunId: "l1" });
    await expect(
      checkDispatched(journalEnv(store), { ...payload(chain(1)), dispatchedSeq: seq }),
    ).resolves.toBeUndefined();
    expect(store.events).toHaveLength(1);
  });

  it("given the run's last dispatched event is the command's, when checked, then it passes from that one get without reading the run's history", async () => {
    const store = new MemoryEventStore();
    await dispatched(store, { runtimeInstanceId: "rt-a", localRunId: "l0" });
    const seq = await dispatched(store, { runtimeInstanceId: "rt-a", localRunId: "l1" });
    let reads = 0;
    const counting = Object.assign(Object.create(store) as MemoryEventStore, {
      read: (...a: Parameters<MemoryEventStore["read"]>) => (reads++, store.read(...a)),
    });
    await expect(
      checkDispatched(journalEnv(counting), { ...payload(chain(1)), dispatchedSeq: seq }),
    ).resolves.toBeUndefined();
    expect(reads).toBe(0);
    // An older dispatch is not the last one: the history is read and decides, as before.
    await expect(
      checkDispatched(journalEnv(counting), { ...payload(chain(1)), dispatchedSeq: seq - 1 }),
    ).rejects.toMatchObject({ code: "contract-violation", message: expect.stringContaining("l0, not l1") });
    expect(reads).toBe(1);
  });

  it("given a sequence naming another LocalRunId, another runtime, no event or a resume dispatch, when a fresh start is checked, then contract-violation names what the log holds", async () => {
    const store = new MemoryEventStore();
    const other = await dispatched(store, { runtimeInstanceId: "rt-a", localRunId: "l0" });
    const elsewhere = await dispatched(store, { runtimeInstanceId: "rt-b", localRunId: "l1" });
    const resume = await dispatched(store, {
      runtimeInstanceId: "rt-a",
      localRunId: "l1",
      resumeExecutionId: eid("r1", "l0"),
    });
    const check = (dispatchedSeq: number) =>
      checkDispatched(journalEnv(store), { ...payload(chain(1)), dispatchedSeq });
    await expect(check(other)).rejects.toMatchObject({
      code: "contract-violation",
      message: expect.stringContaining("dispatched LocalRunId l0, not l1"),
    });
    await expect(check(elsewhere)).rejects.toMatchObject({
      code: "contract-violation",
      message: expect.stringContaining("to rt-b, not to rt-a"),
    });
    await expect(check(resume + 1)).rejects.toMatchObject({
      code: "contract-violation",
      message: expect.stringContaining("no event of this run"),
    });
    await expect(check(resume)).rejects.toMatchObject({
      code: "contract-violation",
      message: expect.stringContaining("not a fresh start"),
    });
    expect(store.events).toHaveLength(3);
  });

  it("given the read started ahead for the run the payload names, when checked, then it decides from that read without one of its own; for another run it reads its own", async () => {
    const store = new MemoryEventStore();
    const seq = await dispatched(store, { runtimeInstanceId: "rt-a", localRunId: "l1" });
    let gets = 0;
    const counting = Object.assign(Object.create(store) as MemoryEventStore, {
      lastOfType: (...a: Parameters<MemoryEventStore["lastOfType"]>) => (gets++, store.lastOfType(...a)),
    });
    const env = journalEnv(counting);
    const early = readDispatchAhead(env, { operation: "DispatchRun", payload: { tenantId: T, sharedRunId: "r1" } });
    expect(gets).toBe(1);
    await expect(
      checkDispatched(env, { ...payload(chain(1)), dispatchedSeq: seq }, undefined, early),
    ).resolves.toBeUndefined();
    expect(gets).toBe(1);
    // Read ahead for another run (a body whose ids the schema then changed cannot be): not used.
    const other = readDispatchAhead(env, { operation: "DispatchRun", payload: { tenantId: T, sharedRunId: "r2" } });
    await expect(
      checkDispatched(env, { ...payload(chain(1)), dispatchedSeq: seq }, undefined, other),
    ).resolves.toBeUndefined();
    expect(gets).toBe(3);
  });

  it("given a body that is not a DispatchRun or names ids that are not subject-safe, when read ahead, then nothing is read", () => {
    const store = new MemoryEventStore();
    let gets = 0;
    const counting = Object.assign(Object.create(store) as MemoryEventStore, {
      lastOfType: (...a: Parameters<MemoryEventStore["lastOfType"]>) => (gets++, store.lastOfType(...a)),
    });
    const env = journalEnv(counting);
    for (const body of [
      null,
      "DispatchRun",
      { operation: "ResumeExecution", payload: { tenantId: T, sharedRunId: "r1" } },
      { operation: "DispatchRun", payload: { tenantId: T } },
      { operation: "DispatchRun", payload: { tenantId: T, sharedRunId: "r1.>" } },
      { operation: "DispatchRun", payload: { tenantId: "*", sharedRunId: "r1" } },
      { operation: "DispatchRun", payload: { tenantId: 7, sharedRunId: "r1" } },
    ])
      expect(readDispatchAhead(env, body)).toBeUndefined();
    expect(gets).toBe(0);
  });

  it("given a resume dispatch, when checked as a resume of another execution, then it is refused", async () => {
    const store = new MemoryEventStore();
    const seq = await dispatched(store, {
      runtimeInstanceId: "rt-a",
      localRunId: "l1",
      resumeExecutionId: eid("r1", "l0"),
    });
    await expect(
      checkDispatched(journalEnv(store), { ...payload(chain(1)), dispatchedSeq: seq }, eid("r1", "l0")),
    ).resolves.toBeUndefined();
    await expect(
      checkDispatched(journalEnv(store), { ...payload(chain(1)), dispatchedSeq: seq }, eid("r1", "l9")),
    ).rejects.toMatchObject({ code: "contract-violation" });
  });
});
