import { describe, expect, it } from "vitest";
import { encodeEvent, SharedRunId, TenantId, type DroverEvent } from "../../../contracts/index.ts";
import { event } from "../../../test/support/streams.ts";
import { RunIndex } from "./run-index.ts";

// Proves no transport: the index is fed events in memory; the log reads of verify-runs.ts are
// stood in for by the history handed to resetRun (the int test reads the real log).
const clock = { now: () => new Date(1_000) };
const acme = TenantId.parse("acme");
const LIFE = ["run.submitted", "run.admitted", "run.dispatched", "run.started", "run.completed"] as const;

const withRun = (e: DroverEvent & { type: "run.submitted" }, id: string): DroverEvent => ({
  ...e,
  data: { ...e.data, sharedRunId: SharedRunId.parse(id) },
});

function finished(idx: RunIndex, id: string, firstSeq: number): { seq: number; time: Date; event: DroverEvent }[] {
  return LIFE.map((type, i) => {
    const e = event(type, { tenantId: acme });
    idx.applyOwn("acme", id, e, firstSeq + i);
    return { seq: firstSeq + i, time: new Date(1_000), event: e };
  });
}

describe("RunIndex bound on terminal runs (in memory, no transport): dropping them changes no decision", () => {
  it("the oldest terminal runs beyond the bound leave memory; counts and the pending set are unchanged", () => {
    const idx = new RunIndex("drover.events", () => undefined, clock);
    idx.maxTerminalRuns = 1;
    finished(idx, "r-1", 1);
    finished(idx, "r-2", 10);
    idx.applyOwn("acme", "r-3", event("run.submitted", { tenantId: acme }), 20);
    expect([...idx.runs.keys()]).toEqual(["acme/r-2", "acme/r-3"]);
    // r-3 is first seen after a drop: it waits for the log (verify-runs.ts) before it is pending.
    expect(idx.pending()).toEqual([]);
    expect(idx.unverified().map((r) => r.sharedRunId)).toEqual(["r-3"]);
    expect(idx.activeCount("acme")).toBe(0);
    expect([...idx.evictedByStatus()]).toEqual([["acme\u0000completed", 1]]);
  });

  it("a dropped run that comes back (a late duplicate submission) is not pending until the log is read, then is seen finished", () => {
    const idx = new RunIndex("drover.events", () => undefined, clock);
    idx.maxTerminalRuns = 0;
    const history = finished(idx, "r-1", 1);
    expect(idx.runs.size).toBe(0);
    const dup = event("run.submitted", { tenantId: acme });
    idx.applyOwn("acme", "r-1", dup, 30);
    const [r] = idx.unverified();
    expect(r?.firstSeq).toBe(30);
    expect(idx.pending()).toEqual([]);
    // What verify-runs.ts does when the log's first event of the run is older than firstSeq.
    idx.resetRun("acme", "r-1", [...history, { seq: 30, time: new Date(1_000), event: dup }]);
    expect(idx.unverified()).toEqual([]);
    expect(idx.pending()).toEqual([]);
    expect(idx.activeCount("acme")).toBe(0);
  });

  it("a new run first seen after drops becomes pending once verified", () => {
    const idx = new RunIndex("drover.events", () => undefined, clock);
    idx.maxTerminalRuns = 0;
    finished(idx, "r-1", 1);
    idx.applyOwn("acme", "r-9", event("run.submitted", { tenantId: acme }), 40);
    const [r] = idx.unverified();
    expect(idx.pending()).toEqual([]);
    r!.unverified = undefined;
    idx.markVerified(r!);
    expect(idx.pending().map((x) => x.sharedRunId)).toEqual(["r-9"]);
  });

  it("a run whose `submitted` the server stored only as the run's first (expected last subject sequence 0) is pending at once after drops: no log read", () => {
    const idx = new RunIndex("drover.events", () => undefined, clock);
    idx.maxTerminalRuns = 0;
    finished(idx, "r-1", 1);
    // As the follower delivers it: the stored headers of the API's (and scheduler's, admission's) append.
    const delivered = (id: string, seq: number, headers: Record<string, string>) => ({
      subject: `drover.events.run.acme.${id}.submitted`,
      seq,
      data: encodeEvent(withRun(event("run.submitted", { tenantId: acme }), id)),
      headers: { get: (n: string) => headers[n] ?? "" },
    });
    idx.apply(
      delivered("r-7", 50, {
        "Nats-Expected-Last-Subject-Sequence": "0",
        "Nats-Expected-Last-Subject-Sequence-Subject": "drover.events.run.acme.r-7.>",
      }),
    );
    expect(idx.unverified()).toEqual([]);
    expect(idx.pending().map((x) => x.sharedRunId)).toEqual(["r-7"]);
    // Without that proof (a producer appending without the expectation) it may be a dropped run coming back: read first.
    idx.apply(delivered("r-8", 51, {}));
    expect(idx.unverified().map((r) => r.sharedRunId)).toEqual(["r-8"]);
    expect(idx.pending().map((x) => x.sharedRunId)).toEqual(["r-7"]);
  });

  it("encode and restore round-trip the index, drop counts included; a bad body throws and changes nothing", () => {
    const idx = new RunIndex("drover.events", () => undefined, clock);
    idx.maxTerminalRuns = 1;
    finished(idx, "r-1", 1);
    finished(idx, "r-2", 10);
    idx.applyOwn("acme", "r-3", event("run.submitted", { tenantId: acme }), 20);
    idx.applyOwn("acme", "r-3", event("run.admitted", { tenantId: acme }), 21);
    const copy = new RunIndex("drover.events", () => undefined, clock);
    copy.restore(idx.encode());
    expect(new TextDecoder().decode(copy.encode())).toBe(new TextDecoder().decode(idx.encode()));
    expect(copy.pending()).toEqual([]);
    // Unverified runs still count against the quota: the conservative side.
    expect(copy.activeCount("acme")).toBe(1);
    expect(copy.unverified().map((r) => r.sharedRunId)).toEqual(["r-3"]);
    expect(() => copy.restore(new TextEncoder().encode('{"kind":"admission-run-index/0"}'))).toThrow();
    expect(copy.runs.size).toBe(2);
  });
});
