import { describe, expect, it } from "vitest";
import { DEFAULT_LAYOUT, taggedLayout } from "./layout.ts";
import {
  decodePage,
  encodePage,
  historyFilterOf,
  historySubjectOf,
  historyTargetOf,
  pageSize,
  parseHistoryRequest,
} from "./history-page.ts";

const bytes = (s: string) => new TextEncoder().encode(s);

describe("the history protocol's subjects and pages (pure: proves no transport)", () => {
  it("maps an exec or run aggregate filter to the request subject naming it, and nothing else", () => {
    expect(historySubjectOf(DEFAULT_LAYOUT, "drover.exec.acme.ex-1.>")).toBe("drover-read.exec.acme.ex-1");
    expect(historySubjectOf(taggedLayout("t1"), "t1.drover.run.acme.r-1.>")).toBe("t1.drover-read.run.acme.r-1");
    for (const f of [
      "drover.runtime.rt-1.>",
      "drover.forensics.acme.f-1.>",
      "drover.exec.acme.>",
      "drover.exec.*.ex-1.>",
      "drover.exec.acme.ex-1.started",
      "other.exec.acme.ex-1.>",
    ])
      expect([f, historySubjectOf(DEFAULT_LAYOUT, f)]).toEqual([f, undefined]);
  });

  it("reads only the aggregate a well-formed request subject names", () => {
    const t = historyTargetOf(DEFAULT_LAYOUT, "drover-read.exec.acme.ex-1");
    expect(t).toEqual({ aggregate: "exec", tenantId: "acme", id: "ex-1" });
    expect(historyFilterOf(DEFAULT_LAYOUT, t!)).toBe("drover.exec.acme.ex-1.>");
    for (const s of [
      "drover-read.exec.acme",
      "drover-read.exec.acme.ex-1.more",
      "drover-read.schedule.acme.s-1",
      "drover-read.exec.*.ex-1",
      "drover-read.exec.acme.>",
      "drover.exec.acme.ex-1",
    ])
      expect([s, historyTargetOf(DEFAULT_LAYOUT, s)]).toEqual([s, undefined]);
  });

  it("accepts a request naming where to start (and how many), nothing malformed", () => {
    expect(parseHistoryRequest(bytes('{"from":3}'))).toEqual({ from: 3 });
    expect(parseHistoryRequest(bytes('{"from":3,"max":1,"filter":"x.>"}'))).toEqual({ from: 3, max: 1 });
    for (const b of ['{"from":0}', '{"from":1.5}', '{"from":"1"}', '{"from":1,"max":0}', "not json", ""])
      expect([b, parseHistoryRequest(bytes(b))]).toEqual([b, undefined]);
  });

  it("round-trips a page of raw messages (any bytes) and an error, and refuses a truncated page", () => {
    const msgs = [
      { seq: 4, subject: "drover.exec.acme.ex-1.started", time: "2026-12-03T20:00:00.000Z", data: bytes('{"a":1}') },
      {
        seq: 9,
        subject: "drover.exec.acme.ex-1.step-completed",
        time: "2026-12-03T20:00:01.000Z",
        data: new Uint8Array([0, 255, 10]),
      },
    ];
    const raw = encodePage({ msgs, more: true });
    expect(raw.length).toBe(pageSize(msgs));
    expect(decodePage(raw)).toEqual({ msgs, more: true });
    expect(decodePage(encodePage({ msgs: [], more: false }))).toEqual({ msgs: [], more: false });
    const error = { code: "bad-request", message: "no" } as const;
    expect(decodePage(encodePage({ error }))).toEqual({ error });
    expect(() => decodePage(raw.subarray(0, raw.length - 1))).toThrow(/truncated/);
    expect(() => decodePage(new Uint8Array([0, 0]))).toThrow(/no header/);
  });
});
