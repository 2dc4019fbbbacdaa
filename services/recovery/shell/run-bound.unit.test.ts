import { describe, expect, it } from "vitest";
import type { EventType } from "../../../contracts/index.ts";
import { event } from "../../../test/support/streams.ts";
import { forensicsIds, ids } from "../../../test/support/example-events.ts";
import { RecoveryState } from "./state.ts";

// Proves no transport: events are applied in memory, as the follower would deliver them.
const T = ids.tenant;
const LIFE: EventType[] = ["run.submitted", "run.admitted", "run.dispatched", "run.started", "run.completed"];

function finish(s: RecoveryState, run: string, from: number): number {
  LIFE.forEach((type, i) => s.applyOwn(`drover.run.${T}.${run}.${type.slice(4)}`, event(type as never), from + i));
  return from + LIFE.length;
}

describe("recovery's bound on terminal runs (in memory, no transport)", () => {
  it("the oldest terminal runs beyond the bound leave memory; a run an open forensics record names stays until it closes", () => {
    const s = new RecoveryState("drover", () => undefined);
    s.bound.max = 1;
    const fid = forensicsIds.inFlight;
    s.applyOwn(
      `drover.forensics.${T}.${fid}.execution-recovery-candidate-detected`,
      event("forensics.execution-recovery-candidate-detected"),
      1,
    );
    let seq = finish(s, ids.sharedRun, 10);
    seq = finish(s, "run-0002", seq);
    seq = finish(s, "run-0003", seq);
    // run-0001 (named by the open record) stays past the bound; the others went, oldest first.
    expect([...s.runs.keys()]).toEqual([`${T}/${ids.sharedRun}`]);
    expect(s.bound.dropped).toBe(2);
    s.applyOwn(
      `drover.forensics.${T}.${fid}.execution-recovery-completed`,
      event("forensics.execution-recovery-completed"),
      seq,
    );
    finish(s, "run-0004", seq + 1);
    expect([...s.runs.keys()]).toEqual([`${T}/run-0004`]);
    expect(s.bound.dropped).toBe(3);
  });

  it("encode and restore keep the runs, the drop count and the protection of open records", () => {
    const s = new RecoveryState("drover", () => undefined);
    s.bound.max = 0;
    s.applyOwn(
      `drover.forensics.${T}.${forensicsIds.inFlight}.execution-recovery-candidate-detected`,
      event("forensics.execution-recovery-candidate-detected"),
      1,
    );
    finish(s, ids.sharedRun, 10);
    finish(s, "run-0002", 20);
    const copy = new RecoveryState("drover", () => undefined);
    copy.bound.max = 0;
    copy.restore(s.encode());
    expect(new TextDecoder().decode(copy.encode())).toBe(new TextDecoder().decode(s.encode()));
    expect([...copy.runs.keys()]).toEqual([`${T}/${ids.sharedRun}`]);
    expect(copy.bound.dropped).toBe(1);
    expect(() => copy.restore(new TextEncoder().encode('{"kind":"recovery-state/0"}'))).toThrow();
    expect(copy.runs.size).toBe(1);
  });
});
