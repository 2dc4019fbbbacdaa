import { describe, expect, it } from "vitest";
import { appendToRunList } from "./run-list.ts";

const entry = (seq: number) => ({ sharedRunId: `run-${seq}`, seq, at: "2026-12-03T00:00:00.000Z" });

describe("a tenant's run list pages (pure; proves no transport)", () => {
  it("appends each submission once, by stream sequence", () => {
    const first = appendToRunList(undefined, () => undefined, "acme", entry(5))!;
    expect(first.count).toMatchObject({ count: 1, lastSeq: 5 });
    expect(first.page.runs.map((r) => r.ordinal)).toEqual([0]);
    expect(appendToRunList(first.count, () => first.page, "acme", entry(5))).toBeUndefined();
  });

  it("a page written before a crash kept the count from following: the retry moves the count only, no second entry", () => {
    const first = appendToRunList(undefined, () => undefined, "acme", entry(5))!;
    const retry = appendToRunList(undefined, () => first.page, "acme", entry(5))!;
    expect(retry.page).toBe(first.page);
    expect(retry.count).toMatchObject({ count: 1, lastSeq: 5 });
    const next = appendToRunList(retry.count, () => retry.page, "acme", entry(9))!;
    expect(next.page.runs.map((r) => [r.sharedRunId, r.ordinal])).toEqual([
      ["run-5", 0],
      ["run-9", 1],
    ]);
  });
});
