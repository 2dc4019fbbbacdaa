import { describe, expect, it } from "vitest";
import { buildEvent, TenantId, type DataOf, type EventType, type Writer } from "../contracts/index.ts";
import { eventData } from "../test/support/event-data.ts";
import type { KillRecord, LoggedEvent } from "./assertions.ts";
import { controlFlowAssertions } from "./control-flow-assertions.ts";
import { mapItemOutput } from "./custom-worker.ts";

// Pure: the control-flow assertions over a hand-built log (a negative control for each); no transport.
const T = "p0-imp-a";
const RUN = "run-1";
const EXEC = "exec-1";
const D = "d".repeat(64);
const writer: Writer = { service: "runtime", instanceId: "rt-1" };
const ctx = { tenantId: TenantId.parse(T), correlationId: RUN, causationId: RUN, writer };
let seq = 0;
const ev = <T extends EventType>(subject: string, type: T, raw: unknown): LoggedEvent => ({
  seq: ++seq,
  subject: `drover.${subject}.${type.split(".")[1]}`,
  event: buildEvent(type, eventData(type, raw) as DataOf<T>, ctx, { eventId: `e-${seq}`, now: new Date(0) }),
});
const onRun = (type: EventType, raw: unknown) => ev(`run.${T}.${RUN}`, type, raw);
const onExec = (type: EventType, raw: unknown) => ev(`exec.${T}.${EXEC}`, type, raw);
const done = (stepId: string, output: unknown = {}) =>
  onExec("exec.step-completed", { stepId, attempt: 1, output, outputDigest: D, durationMs: 1 });
const items = [0, 1, 2].map((i) => ({ i, ms: 10 }));
const outputs = items.map(mapItemOutput);
const kill = { sharedRunId: RUN, tenantId: T, killedAtMs: 0, stepDurableAtMs: 0, completedAtKill: 1 } as KillRecord;

/** A run whose map item 0 completed before a kill, items 1–2 after the resume, and whose wait the approver signalled. */
function goodLog(o: { fanin?: unknown; by?: string; item1Twice?: boolean } = {}): LoggedEvent[] {
  seq = 0;
  const by = o.by ?? `tenant:${T}:token:approver`;
  const log = [
    onRun("run.started", { executionId: EXEC, localRunId: "l1", runtimeInstanceId: "rt-1" }),
    onExec("exec.map-expanded", {
      stepId: "fanout",
      count: 3,
      itemsDigest: D,
      maxConcurrency: 3,
      toleratedFailures: 0,
    }),
    onExec("exec.wait-opened", { stepId: "approval", name: "approval", timeoutAt: "2026-01-01T00:00:00.000Z" }),
    done("fanout--0", outputs[0]),
    onExec("exec.resumed", { runtimeInstanceId: "rt-2", localRunId: "l1", epoch: 1, completedSteps: 2 }),
  ];
  const signal = onRun("run.signal-received", { name: "approval", by, payload: { approved: true }, payloadDigest: D });
  log.push(signal, done("fanout--1", outputs[1]), done("fanout--2", outputs[2]));
  if (o.item1Twice) log.push(done("fanout--1", outputs[1]));
  const resolved = { stepId: "approval", name: "approval", by: "signal", principal: by, payloadDigest: D };
  log.push(onExec("exec.wait-resolved", { ...resolved, signalSeq: signal.seq }), done("approval"));
  log.push(done("fanout", { items: outputs, failed: [] }));
  log.push(done("fanin", o.fanin ?? { received: outputs, failed: [] }), done("finish"));
  return log;
}
const check = (log: LoggedEvent[]) =>
  controlFlowAssertions(log, { runs: [{ tenantId: T, sharedRunId: RUN, items }], kills: [kill] }, 1).map((a) => [
    a.name.split(":")[0],
    a.violations,
  ]);

describe("control-flow proof assertions (pure, proves no transport)", () => {
  it("a log with every item completed once, the fan-in in order and the wait resolved by the approver passes all three", () => {
    expect(check(goodLog())).toEqual([
      ["map", 0],
      ["fan-in", 0],
      ["wait", 0],
    ]);
  });
  it("an item completed twice, a fan-in out of order, a signal by another principal: each fails its own assertion", () => {
    expect(check(goodLog({ item1Twice: true }))).toEqual([
      ["map", 1],
      ["fan-in", 0],
      ["wait", 0],
    ]);
    expect(check(goodLog({ fanin: { received: [...outputs].reverse(), failed: [] } }))).toEqual([
      ["map", 0],
      ["fan-in", 1],
      ["wait", 0],
    ]);
    expect(check(goodLog({ by: `tenant:${T}` }))).toEqual([
      ["map", 0],
      ["fan-in", 0],
      ["wait", 1],
    ]);
  });
});
