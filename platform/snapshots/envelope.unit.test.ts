import { describe, expect, it } from "vitest";
import {
  bodyRejection,
  headRejection,
  nextSlot,
  parseHead,
  SNAPSHOT_FORMAT,
  snapshotDue,
  snapshotPolicyOf,
  type SnapshotHead,
} from "./envelope.ts";

const head: SnapshotHead = {
  format: SNAPSHOT_FORMAT,
  kind: "k/1",
  seq: 100,
  stream: "DROVER",
  streamCreated: "2026-01-01T00:00:00Z",
  sha256: "ab",
  size: 10,
  slot: "a",
  chunks: 1,
  writtenAt: "2026-01-01T00:00:01Z",
};
const now = { name: "DROVER", created: "2026-01-01T00:00:00Z", lastSeq: 120 };

describe("snapshot heads and the write policy (pure: proves no transport)", () => {
  it("a head of this format, kind and stream, within the stream, is trusted", () => {
    expect(headRejection(head, "k/1", now)).toBeUndefined();
    expect(headRejection(head, "k/1", { ...now, lastSeq: 100 })).toBeUndefined();
  });
  it("another store format or state version is ignored", () => {
    expect(headRejection({ ...head, format: "drover-snapshot/0" as never }, "k/1", now)).toBe("format");
    expect(headRejection(head, "k/2", now)).toBe("kind");
  });
  it("a snapshot of another stream, or of a recreated one, is ignored", () => {
    expect(headRejection(head, "k/1", { ...now, name: "OTHER" })).toBe("other-stream");
    expect(headRejection(head, "k/1", { ...now, created: "2026-02-01T00:00:00Z" })).toBe("other-stream");
  });
  it("a snapshot covering sequences the stream does not hold is not trusted", () => {
    expect(headRejection(head, "k/1", { ...now, lastSeq: 99 })).toBe("beyond-stream");
  });
  it("a body whose sha256 or size differs from the head fails the checksum", () => {
    expect(bodyRejection(head, 10, "ab")).toBeUndefined();
    expect(bodyRejection(head, 10, "ac")).toBe("checksum");
    expect(bodyRejection(head, 11, "ab")).toBe("checksum");
  });
  it("parses only well-formed heads", () => {
    expect(parseHead(new TextEncoder().encode(JSON.stringify(head)))).toEqual(head);
    expect(parseHead(new TextEncoder().encode("{"))).toBeUndefined();
    expect(parseHead(new TextEncoder().encode(JSON.stringify({ ...head, seq: -1 })))).toBeUndefined();
    expect(parseHead(new TextEncoder().encode(JSON.stringify({ ...head, slot: "c" })))).toBeUndefined();
  });
  it("the next snapshot never overwrites the slot the current head names", () => {
    expect(nextSlot(undefined)).toBe("a");
    expect(nextSlot(head)).toBe("b");
    expect(nextSlot({ ...head, slot: "b" })).toBe("a");
  });
  it("a snapshot is due after N events or T ms, and only past the last one's sequence", () => {
    const p = { everyEvents: 10, everyMs: 1000 };
    expect(snapshotDue(p, { seq: 5, atMs: 0, events: 10 }, 6, 1)).toBe(true);
    expect(snapshotDue(p, { seq: 5, atMs: 0, events: 3 }, 6, 999)).toBe(false);
    expect(snapshotDue(p, { seq: 5, atMs: 0, events: 3 }, 6, 1000)).toBe(true);
    expect(snapshotDue(p, { seq: 6, atMs: 0, events: 30 }, 6, 5000)).toBe(false);
  });
  it("the policy comes from the environment; 0 events turns writing off", () => {
    expect(snapshotPolicyOf({})).toEqual({ everyEvents: 50_000, everyMs: 60_000 });
    expect(snapshotPolicyOf({ DROVER_SNAPSHOT_EVERY_EVENTS: "7", DROVER_SNAPSHOT_EVERY_MS: "2000" })).toEqual({
      everyEvents: 7,
      everyMs: 2000,
    });
    expect(snapshotPolicyOf({ DROVER_SNAPSHOT_EVERY_EVENTS: "0" })).toBeUndefined();
  });
});
