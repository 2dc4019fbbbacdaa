import { connectHarness } from "../../platform/nats-auth/server-keys.ts";
import { afterEach, beforeEach, describe, expect, inject, it } from "vitest";
import { isDroverError, type DroverEvent } from "../../contracts/index.ts";
import { createEventStore } from "../../streams/event-store.ts";
import { execRef, runRef, aggregateWildcard } from "../../streams/subjects.ts";
import type { EventStore } from "../../streams/types.ts";
import { startHistoryResponder } from "../../streams/history-responder.ts";
import { ids } from "../support/example-events.ts";
import { event, freshStreams, type StreamsFixture } from "../support/streams.ts";

const ex = (id: string) => execRef(ids.tenant, id);

// Both readers (streams/scoped-read.ts): batched Direct Gets, and the subject-scoped reads a runtime uses;
// and the runtime's store, whose appends made in one turn leave together (streams/publish-gate.ts): each
// still its own conditional publish (the 20 concurrent writers below all leave in one socket write).
describe.each([
  ["direct gets", {}],
  ["subject-scoped reads", { subjectScopedReads: true }],
  ["subject-scoped reads, coalesced publishes", { subjectScopedReads: true, coalescePublishes: true }],
])("event store append/read against a real nats-server (%s)", (_, opts) => {
  let fx: StreamsFixture;
  let store: EventStore;
  beforeEach(async () => {
    fx = await freshStreams(inject("natsUrl"));
    // Subject-scoped reads of a history go through the provisioner's responder (streams/history-responder.ts).
    if ("subjectScopedReads" in opts) startHistoryResponder(fx.nc, fx.jsm, fx.layout);
    store = createEventStore(fx.nc, fx.layout, opts);
  });
  afterEach(async () => {
    await fx.close();
  });

  const lastStreamSeq = async () => (await fx.jsm.streams.info(fx.layout.eventStream)).state.last_seq;

  it("appends at the expected sequence and reads the aggregate back in stream order with its last sequence", async () => {
    const a = await store.append(ex("ex-1"), event("exec.started"), { expectedSeq: 0 });
    const other = await store.append(ex("ex-2"), event("exec.started"), { expectedSeq: 0 });
    const b = await store.append(ex("ex-1"), event("exec.step-completed"), { expectedSeq: a.seq });
    expect([a.seq, other.seq, b.seq]).toEqual([1, 2, 3]);
    const h = await store.read(ex("ex-1"));
    expect(h.events.map((e) => [e.seq, e.event.type])).toEqual([
      [1, "exec.started"],
      [3, "exec.step-completed"],
    ]);
    expect(h.events[0]!.subject).toBe(`${fx.layout.eventPrefix}.exec.${ids.tenant}.ex-1.started`);
    expect(h.lastSeq).toBe(3);
    expect(await store.lastSeq(ex("ex-1"))).toBe(3);
    expect(await store.lastSeq(ex("ex-none"))).toBe(0);
    expect(await store.read(ex("ex-none"))).toEqual({ events: [], lastSeq: 0 });
  });

  it("rejects an append whose expected sequence is stale with version-conflict naming the aggregate scope", async () => {
    const a = await store.append(ex("ex-1"), event("exec.started"), { expectedSeq: 0 });
    const err = await store
      .append(ex("ex-1"), event("exec.step-completed"), { expectedSeq: 0 })
      .catch((e: unknown) => e);
    expect(isDroverError(err, "version-conflict")).toBe(true);
    expect((err as { details: object }).details).toMatchObject({
      subject: aggregateWildcard(fx.layout, ex("ex-1")),
      expectedSeq: 0,
      actualSeq: a.seq,
    });
    // The expectation is scoped to the aggregate wildcard, not the event's own subject: a first
    // `step-completed` with expectation 0 conflicts because `started` exists on the aggregate.
    expect(await lastStreamSeq()).toBe(1);
  });

  it("lets exactly one of 20 concurrent writers win each version; the rest get version-conflict; history has no gaps or duplicates", async () => {
    const ref = ex("ex-race");
    let expected = 0;
    const winners: number[] = [];
    for (let round = 0; round < 8; round++) {
      const results = await Promise.allSettled(
        Array.from({ length: 20 }, () => store.append(ref, event("exec.step-completed"), { expectedSeq: expected })),
      );
      const ok = results.filter(
        (r): r is PromiseFulfilledResult<{ seq: number; duplicate: boolean }> => r.status === "fulfilled",
      );
      const failed = results.filter((r): r is PromiseRejectedResult => r.status === "rejected");
      expect(ok).toHaveLength(1);
      expect(ok[0]!.value.duplicate).toBe(false);
      expect(failed).toHaveLength(19);
      for (const f of failed) expect(isDroverError(f.reason, "version-conflict")).toBe(true);
      expected = ok[0]!.value.seq;
      winners.push(expected);
    }
    const h = await store.read(ref);
    expect(h.events.map((e) => e.seq)).toEqual(winners);
    expect(new Set(h.events.map((e) => e.event.eventId)).size).toBe(8);
    expect(await lastStreamSeq()).toBe(8);
  });

  it("stores a retried append with the same msg id once and reports the retry as a duplicate", async () => {
    const e = event("exec.started");
    const first = await store.append(ex("ex-1"), e, { expectedSeq: 0 });
    const retry = await store.append(ex("ex-1"), e, { expectedSeq: 0 });
    expect(first).toEqual({ seq: 1, duplicate: false });
    expect(retry).toEqual({ seq: 1, duplicate: true });
    // Still idempotent after the aggregate moved on (the server checks the expectation before dedupe).
    await store.append(ex("ex-1"), event("exec.step-completed"), { expectedSeq: 1 });
    expect(await store.append(ex("ex-1"), e, { expectedSeq: 0 })).toEqual({ seq: 1, duplicate: true });
    expect((await store.read(ex("ex-1"))).events).toHaveLength(2);
    expect(await lastStreamSeq()).toBe(2);
  });

  it("refuses a different event reusing a msg id of another aggregate instead of reporting it stored", async () => {
    await store.append(ex("ex-1"), event("exec.started"), { expectedSeq: 0, msgId: "cmd-42" });
    const err = await store
      .append(ex("ex-2"), event("exec.started"), { expectedSeq: 0, msgId: "cmd-42" })
      .catch((x: unknown) => x);
    expect(isDroverError(err, "contract-violation")).toBe(true);
    expect(await store.lastSeq(ex("ex-2"))).toBe(0);
  });

  it("rejects an invalid event before any byte is appended", async () => {
    await store.append(ex("ex-1"), event("exec.started"), { expectedSeq: 0 });
    const bad = { ...event("exec.step-completed"), data: { stepId: "NOT VALID" } } as unknown as DroverEvent;
    const wrongTenant = { ...event("exec.step-completed"), tenantId: "tenant-b" } as DroverEvent;
    const wrongAggregate = event("run.cancelled");
    for (const e of [bad, wrongTenant, wrongAggregate]) {
      const err = await store.append(ex("ex-1"), e, { expectedSeq: 1 }).catch((x: unknown) => x);
      expect(isDroverError(err, "contract-violation")).toBe(true);
    }
    // appendAll validates every event before sending the first.
    const all = await store
      .appendAll(ex("ex-1"), [event("exec.step-completed"), bad], { expectedSeq: 1 })
      .catch((x: unknown) => x);
    expect(isDroverError(all, "contract-violation")).toBe(true);
    const info = await fx.jsm.streams.info(fx.layout.eventStream);
    expect(info.state.messages).toBe(1);
    expect(info.state.last_seq).toBe(1);
  });

  it("appendAll chains each event's expectation on the previous one and stops at the first conflict", async () => {
    const ref = runRef(ids.tenant, "run-1");
    const r = await store.appendAll(
      ref,
      [event("run.submitted"), event("run.queued-globally"), event("run.admitted")],
      { expectedSeq: 0 },
    );
    expect(r.map((a) => a.seq)).toEqual([1, 2, 3]);
    const err = await store.appendAll(ref, [event("run.dispatched")], { expectedSeq: 2 }).catch((x: unknown) => x);
    expect(isDroverError(err, "version-conflict")).toBe(true);
    expect((err as { details: { appended: unknown[]; failedIndex: number } }).details).toMatchObject({
      appended: [],
      failedIndex: 0,
    });
  });

  it("reports an undecodable stored event with its stream sequence instead of skipping it", async () => {
    await store.append(ex("ex-1"), event("exec.started"), { expectedSeq: 0 });
    // A producer bypassing the store (e.g. a misconfigured service) wrote garbage on the aggregate.
    await fx.jsm
      .jetstream()
      .publish(`${fx.layout.eventPrefix}.exec.${ids.tenant}.ex-1.step-completed`, '{"type":"exec.step-completed"}');
    const err = await store.read(ex("ex-1")).catch((x: unknown) => x);
    expect(isDroverError(err, "contract-violation")).toBe(true);
    expect((err as { details: { seq: number } }).details.seq).toBe(2);
    expect((err as Error).message).toContain("at stream sequence 2");
  });

  it("reads a submission without checking its DAG only when asked withoutPayload; every other event is still checked", async () => {
    const run = runRef(ids.tenant, ids.sharedRun);
    const subject = (name: string) => `${fx.layout.eventPrefix}.run.${ids.tenant}.${ids.sharedRun}.${name}`;
    const bad = { ...event("run.submitted"), data: { ...event("run.submitted").data, dag: { steps: "not a list" } } };
    // Written past the store (which checks every event it appends), as a buggy producer would.
    await fx.jsm.jetstream().publish(subject("submitted"), JSON.stringify(bad));
    expect(isDroverError(await store.read(run).catch((x: unknown) => x), "contract-violation")).toBe(true);
    const h = await store.read(run, { withoutPayload: true });
    expect(h.events.map((e) => [e.seq, e.event.type])).toEqual([[1, "run.submitted"]]);
    await fx.jsm.jetstream().publish(subject("admitted"), '{"type":"run.admitted"}');
    const err = await store.read(run, { withoutPayload: true }).catch((x: unknown) => x);
    expect(isDroverError(err, "contract-violation")).toBe(true);
    expect((err as { details: { seq: number } }).details.seq).toBe(2);
  });

  it("reports a closed connection as retryable event-store-unavailable", async () => {
    const nc = await connectHarness({ servers: inject("natsUrl") });
    const s = createEventStore(nc, fx.layout, opts);
    await nc.close();
    const err = await s.append(ex("ex-1"), event("exec.started"), { expectedSeq: 0 }).catch((x: unknown) => x);
    expect(err).toMatchObject({ code: "event-store-unavailable", retryable: true });
    expect(await store.lastSeq(ex("ex-1"))).toBe(0);
  });

  it("reads an aggregate longer than one direct-get batch completely and in order", async () => {
    const ref = ex("ex-long");
    const appended = await store.appendAll(
      ref,
      Array.from({ length: 1500 }, () => event("exec.step-completed")),
      { expectedSeq: 0 },
    );
    await store.append(ex("ex-other"), event("exec.started"), { expectedSeq: 0 });
    const h = await store.read(ref);
    expect(h.events.map((e) => e.seq)).toEqual(appended.map((a) => a.seq));
  }, 120_000);
});
