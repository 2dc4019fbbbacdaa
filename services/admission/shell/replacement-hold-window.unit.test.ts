import { describe, expect, it } from "vitest";
import type { DroverEvent, EventType } from "../../../contracts/index.ts";
import { event } from "../../../test/support/streams.ts";
import { ids } from "../../../test/support/example-events.ts";
import { RunIndex } from "./run-index.ts";

/*
 * Proves no transport: the run index is fed the events of the session-32 failure of
 * `admission-replacement-hold` (real NATS there) in memory. An admission pass reads the index twice
 * with an await between (placer.ts): the recovery items (`side`) before the capacity read, the
 * replacement's kept places (`keptForReplaced`) after it. A fold between the two reads must not
 * leave the pass with neither the resume nor the kept place, or the tenant's new run takes it first.
 */
const now = 1_500;
const t = ids.tenant;
const dead = ids.runtime;
const replacement = ids.replacementRuntime;

function ground(): { idx: RunIndex; fold: (type: EventType, data?: object) => void } {
  const idx = new RunIndex("drover.events", () => undefined, { now: () => new Date(1_000) });
  let seq = 0;
  const fold = (type: EventType, data?: object) => {
    const e = event(type, { tenantId: t }) as DroverEvent;
    idx.applyOwn(t, ids.sharedRun, (data ? { ...e, data: { ...e.data, ...data } } : e) as DroverEvent, ++seq);
  };
  fold("run.submitted", { sharedRunId: ids.sharedRun });
  fold("run.admitted");
  fold("run.dispatched");
  fold("run.started");
  // Recovery's replacement of the dead runtime, fulfilled.
  const at = (e: DroverEvent, s: number) => ({ seq: s, time: new Date(1_000), event: e });
  idx.resetScaleOut(t, ids.scaleOut, [
    at({ ...event("scaleout.requested"), data: { ...event("scaleout.requested").data, replaces: dead } }, 100),
    at({ ...event("scaleout.fulfilled"), data: { runtimeInstanceId: replacement } }, 101),
  ]);
  seq = 10;
  return { idx, fold };
}

const keptOn = (idx: RunIndex) => idx.keptForReplaced(now).get(replacement) ?? 0;
const inSide = (idx: RunIndex) => idx.work.side.has(idx.get(t, ids.sharedRun)!);

describe("a replacement's place stays kept until the lost run is placed again (in memory, proves no transport)", () => {
  it("whatever fold falls between a pass's read of its recovery items and its read of the kept places", () => {
    const { idx, fold } = ground();
    // Each state the fold goes through before the resume is placed again: [resume in side, kept places].
    const states: [boolean, number][] = [[inSide(idx), keptOn(idx)]];
    fold("run.requeued-for-resume", { failedRuntimeInstanceId: dead });
    states.push([inSide(idx), keptOn(idx)]);
    // A pass reads `side` at state i and the kept places at state j >= i: one of them must show the resume.
    for (let i = 0; i < states.length; i++)
      for (let j = i; j < states.length; j++)
        expect({ i, j, ok: states[i]![0] || states[j]![1] > 0 }).toMatchObject({ ok: true });
    expect(states).toEqual([
      [false, 1],
      [true, 1],
    ]);
    // Its placement on the replacement ends the hold: the run holds that place now.
    fold("run.admitted", { runtimeInstanceId: replacement, localRunId: ids.replacementLocalRun });
    expect(keptOn(idx)).toBe(0);
  });

  it("a resume whose dispatch failed is owed again; a lost run that ends is not; a snapshot keeps what is owed", () => {
    const { idx, fold } = ground();
    fold("run.requeued-for-local-queued-recovery", { failedRuntimeInstanceId: dead });
    expect(keptOn(idx)).toBe(1);
    const copy = new RunIndex("drover.events", () => undefined, { now: () => new Date(1_000) });
    copy.restore(idx.encode());
    expect(copy.keptForReplaced(now).get(replacement)).toBe(1);
    fold("run.admitted", { runtimeInstanceId: replacement, localRunId: ids.replacementLocalRun });
    expect(keptOn(idx)).toBe(0);
    fold("run.dispatch-failed", { runtimeInstanceId: replacement, localRunId: ids.replacementLocalRun });
    expect(keptOn(idx)).toBe(1);
    fold("run.failed");
    expect(keptOn(idx)).toBe(0);
  });
});
