import { describe, expect, it } from "vitest";
import type { EventType } from "../../../contracts/index.ts";
import { encodeEvent } from "../../../contracts/index.ts";
import { event } from "../../../test/support/streams.ts";
import { ids } from "../../../test/support/example-events.ts";
import { foldRun, type RunEvent } from "../../../aggregates/run.ts";
import { RecoveryState } from "./state.ts";

// Proves no transport: messages are applied in memory, as the follower delivers them (subject, sequence, bytes).
const T = ids.tenant;
const X = ids.execution;
const msg = (type: EventType, seq: number, data?: Uint8Array) => ({
  subject: `drover.exec.${T}.${X}.${type.slice(5)}`,
  seq,
  data: data ?? encodeEvent(event(type as never)),
  info: { timestampNanos: seq * 1e6 } as never,
});

describe("recovery's fold of execution ends (in memory, no transport)", () => {
  it("an execution that never resumed: its exec.completed is neither decoded nor kept, and wakes no pass", () => {
    const invalid: number[] = [];
    const s = new RecoveryState("drover", (_subject, seq) => invalid.push(seq));
    let passes = 0;
    s.onChange(() => passes++);
    s.apply(msg("exec.completed", 5));
    s.apply(msg("exec.completed", 6, new TextEncoder().encode("{not an event")));
    expect(s.execs.size).toBe(0);
    expect(invalid).toEqual([]);
    expect(passes).toBe(0);
  });

  it("an execution that resumed: its exec.completed is decoded and its digest kept (the timeline's dag-resume-completed)", () => {
    const invalid: number[] = [];
    const s = new RecoveryState("drover", (_subject, seq) => invalid.push(seq));
    s.apply(msg("exec.resumed", 7));
    expect(s.execs.get(X)?.resumed?.runtimeInstanceId).toBeDefined();
    expect(s.execs.get(X)?.completedDigest).toBeUndefined();
    s.apply(msg("exec.completed", 8, new TextEncoder().encode("{not an event")));
    expect(invalid).toEqual([8]);
    s.apply(msg("exec.completed", 9));
    expect(s.execs.get(X)?.completedDigest).toBe(event("exec.completed").data.outputDigest);
  });
});

describe("recovery's fold of runs keeps no DAG, input or output (in memory, no transport)", () => {
  const R = ids.sharedRun;
  const runMsg = (e: ReturnType<typeof event>, seq: number, raw?: Uint8Array) => ({
    subject: `drover.run.${T}.${R}.${e.type.slice(4)}`,
    seq,
    data: raw ?? encodeEvent(e),
    info: { timestampNanos: seq * 1e6 } as never,
  });
  const LIFE = ["run.submitted", "run.admitted", "run.dispatched", "run.started", "run.completed"] as const;

  it("folds a run's lifecycle to the status and placement of the full fold, at every step, without its payload", () => {
    const s = new RecoveryState("drover", () => undefined);
    const history: { seq: number; event: RunEvent }[] = [];
    LIFE.forEach((type, i) => {
      const e = event(type as never) as RunEvent;
      history.push({ seq: 10 + i, event: e });
      s.apply(runMsg(e, 10 + i));
      const { dag, input: _input, output: _output, ...full } = foldRun(history);
      expect(dag).toBeDefined(); // what the full fold keeps and recovery does not
      expect(s.runs.get(`${T}/${R}`)?.state).toEqual(full);
    });
  });

  it("folds a submission whose DAG is invalid (admission rejects it; its rejection ends the run) and still reports a bad envelope", () => {
    const invalid: number[] = [];
    const s = new RecoveryState("drover", (_subject, seq) => invalid.push(seq));
    const sub = event("run.submitted");
    const cyclic = { steps: [{ id: "a", kind: "compute", dependsOn: ["a"] }] };
    s.apply(runMsg(sub, 3, new TextEncoder().encode(JSON.stringify({ ...sub, data: { ...sub.data, dag: cyclic } }))));
    expect(s.runs.get(`${T}/${R}`)?.state.status).toBe("submitted");
    s.apply(runMsg(event("run.rejected"), 4));
    expect(s.runs.get(`${T}/${R}`)?.state.status).toBe("rejected");
    s.apply(runMsg(sub, 5, new TextEncoder().encode(JSON.stringify({ ...sub, tenantId: "Not An Id" }))));
    expect(invalid).toEqual([5]);
  });
});

describe("recovery's fold of a runtime's own drain from its heartbeats (in memory, no transport)", () => {
  const beat = (beatNo: number, draining: boolean, runningRuns: number) => ({
    subject: "drover-hb.rt-a",
    seq: beatNo,
    data: new TextEncoder().encode(
      JSON.stringify({
        type: "heartbeat",
        runtimeInstanceId: "rt-a",
        hostIncarnation: "pid:42:1",
        beat: beatNo,
        at: new Date(beatNo * 1_000).toISOString(),
        workers: 1,
        activeWorkers: runningRuns,
        availableWorkers: 1 - runningRuns,
        queuedRuns: 0,
        runningRuns,
        availableSlots: 0,
        paused: false,
        draining,
      }),
    ),
  });
  it("the end of a drain (draining, nothing running or queued) makes it stopping; a drain with runs in it does not", () => {
    const invalid: string[] = [];
    const s = new RecoveryState("drover", (_subject, _seq, error) => invalid.push(error));
    s.applyBeat(beat(1, false, 0), 1_000);
    s.applyBeat(beat(2, true, 1), 2_000);
    expect(s.drainingBeatMs.has("rt-a")).toBe(false);
    s.applyBeat(beat(3, true, 0), 3_000);
    expect(s.drainingBeatMs.get("rt-a")).toBe(3_000);
    expect(s.lastBeatMs.get("rt-a")).toBe(3_000);
    // Another runtime's draining claim on this runtime's subject is refused as forged (streams/heartbeat-message.ts).
    const forged = { ...beat(4, true, 0), subject: "drover-hb.rt-b" };
    s.applyBeat(forged, 4_000);
    expect(s.drainingBeatMs.has("rt-b")).toBe(false);
    expect(invalid).toHaveLength(1);
    expect(invalid[0]).toMatch(/payload names runtime rt-a/);
  });
});
