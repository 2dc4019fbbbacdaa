import { describe, expect, it } from "vitest";
import { execRef } from "../../../streams/subjects.ts";
import { MemoryEventStore } from "../../../test/support/memory-event-store.ts";
import { appendRecoveryPause } from "../../../test/support/recovery-pause.ts";
import { openFresh } from "./execution-open.ts";
import { AggregateJournal } from "./journal.ts";
import { chain, journalEnv, payload, T } from "./execution-fixtures.ts";

// Unit tier with an in-memory event store: proves the executor's decisions and fencing reactions,
// NOT any transport or JetStream behaviour (the host tier proves those against real processes).
describe("AggregateJournal: the runtime is the single writer of its execution (in-memory store; proves no transport)", () => {
  it("after a version conflict, the journal is lost: that append and every queued one fail with execution-ownership-lost and none is sent", async () => {
    const store = new MemoryEventStore();
    const opened = await openFresh(journalEnv(store), payload(chain(2)));
    // A foreign writer (recovery) appends after the runtime's last sequence.
    await appendRecoveryPause(store, opened, opened.exec.lastSeq);
    const attemptsBefore = store.appendLog.length;
    const a = opened.exec.append(opened.emit("exec.completed", { outputDigest: "a".repeat(64) }));
    const b = opened.exec.append(opened.emit("exec.completed", { outputDigest: "b".repeat(64) }));
    await expect(a).rejects.toMatchObject({ code: "execution-ownership-lost" });
    await expect(b).rejects.toMatchObject({ code: "execution-ownership-lost" });
    expect(store.appendLog.length - attemptsBefore).toBe(1);
  });

  it("an append with no answer is retried with the same msg id and expectation, so it lands exactly once", async () => {
    const store = new MemoryEventStore();
    const opened = await openFresh(journalEnv(store), payload(chain(1)));
    store.failNext(2);
    await opened.exec.append(opened.emit("exec.completed", { outputDigest: "a".repeat(64) }));
    const tries = store.appendLog.slice(-3);
    expect(tries.map((t) => t.outcome)).toEqual(["unavailable", "unavailable", "stored"]);
    expect(new Set(tries.map((t) => `${t.msgId}@${t.expectedSeq}`)).size).toBe(1);
  });

  it("two writers deciding at the same expectation never share a msg id (a foreign decision cannot be acked as our duplicate)", () => {
    const store = new MemoryEventStore();
    const ref = execRef(T, "e1");
    const mine = new AggregateJournal(store, ref, 5, "rt-a.e0", async () => undefined);
    const theirs = new AggregateJournal(store, ref, 5, "rt-b.e1", async () => undefined);
    expect(mine.lastSeq).toBe(theirs.lastSeq);
    const ids = [mine, theirs].map((j) => j.writerKey);
    expect(ids[0]).not.toBe(ids[1]);
  });
});
