import { afterEach, beforeEach, describe, expect, inject, it } from "vitest";
import { DroverError, isDroverError } from "../../contracts/index.ts";
import {
  ensureConsumer,
  runConsumer,
  type ConsumerRunner,
  type DurableConsumerSpec,
} from "../../streams/consumer-runner.ts";
import type { Outcome } from "../../streams/consumer-outcome.ts";
import { readDeadLetters } from "../../streams/dead-letters.ts";
import { createEventStore } from "../../streams/event-store.ts";
import { execRef } from "../../streams/subjects.ts";
import type { EventStore, StoredEvent } from "../../streams/types.ts";
import { ids } from "../support/example-events.ts";
import { event, eventually, freshStreams, type StreamsFixture } from "../support/streams.ts";

type Settled = { seq: number; deliveryCount: number; outcome: Outcome; at: number };

describe("durable consumer runner against a real nats-server", () => {
  let fx: StreamsFixture;
  let store: EventStore;
  let runner: ConsumerRunner | undefined;
  beforeEach(async () => {
    fx = await freshStreams(inject("natsUrl"));
    store = createEventStore(fx.nc, fx.layout);
  });
  afterEach(async () => {
    await runner?.stop();
    runner = undefined;
    await fx.close();
  });

  const spec = (over: Partial<DurableConsumerSpec> = {}): DurableConsumerSpec => ({
    name: "reactor",
    filter: `${fx.layout.eventPrefix}.exec.>`,
    maxDeliver: 3,
    ackWaitMs: 5_000,
    ...over,
  });

  async function start(
    s: DurableConsumerSpec,
    handler: (e: StoredEvent, n: number) => Promise<void>,
    backoffMs = [150],
  ) {
    const settled: Settled[] = [];
    await ensureConsumer(fx.jsm, fx.layout, s);
    runner = await runConsumer(fx.nc, fx.layout, s, (e, c) => handler(e, c.deliveryCount), {
      backoffMs,
      onOutcome: (o) =>
        settled.push({ seq: o.seq, deliveryCount: o.deliveryCount, outcome: o.outcome, at: Date.now() }),
    });
    return settled;
  }
  const append = (id: string) => store.append(execRef(ids.tenant, id), event("exec.started"), { expectedSeq: 0 });
  const consumerInfo = () => fx.jsm.consumers.info(fx.layout.eventStream, "reactor");

  it("acks each handled event once, confirmed by the server", async () => {
    const settled = await start(spec(), async () => undefined);
    for (const id of ["ex-1", "ex-2", "ex-3"]) await append(id);
    await eventually("three acks", async () => (settled.length === 3 ? true : undefined));
    expect(settled.map((s) => [s.seq, s.deliveryCount, s.outcome.kind])).toEqual([
      [1, 1, "ack"],
      [2, 1, "ack"],
      [3, 1, "ack"],
    ]);
    const info = await consumerInfo();
    expect(info.ack_floor.stream_seq).toBe(3);
    expect(info.num_ack_pending).toBe(0);
  });

  it("naks unknown and retryable typed errors with backoff and acks the redelivery that succeeds", async () => {
    const settled = await start(
      spec({ maxDeliver: 5 }),
      async (_e, n) => {
        if (n === 1) throw new Error("ECONNREFUSED (infrastructure)");
        if (n === 2) throw new DroverError("runtime-unreachable", "try later");
      },
      [150, 300],
    );
    await append("ex-1");
    await eventually("the third delivery to be acked", async () =>
      settled.at(-1)?.outcome.kind === "ack" ? true : undefined,
    );
    expect(settled.map((s) => [s.deliveryCount, s.outcome])).toEqual([
      [1, { kind: "nak", delayMs: 150 }],
      [2, { kind: "nak", delayMs: 300 }],
      [3, { kind: "ack" }],
    ]);
    // the server honoured the nak delays (lower bounds only: never assert upper bounds on a shared machine)
    expect(settled[1]!.at - settled[0]!.at).toBeGreaterThanOrEqual(140);
    expect(settled[2]!.at - settled[1]!.at).toBeGreaterThanOrEqual(290);
  });

  it("terms a non-retryable error without redelivery and records it as a dead letter with the reason", async () => {
    const settled = await start(spec(), async () => {
      throw new DroverError("execution-ownership-lost", "another owner appended");
    });
    const a = await append("ex-1");
    const dead = await eventually("a dead letter", async () => (await readDeadLetters(fx.jsm, fx.layout)).at(0));
    expect(dead).toMatchObject({
      kind: "terminated",
      stream: fx.layout.eventStream,
      consumer: "reactor",
      streamSeq: a.seq,
      reason: "execution-ownership-lost: another owner appended",
    });
    expect(settled.map((s) => s.outcome.kind)).toEqual(["term"]);
    expect((await consumerInfo()).num_ack_pending).toBe(0);
  });

  it("terms an event that does not decode as a contract violation, naming its sequence in the dead letter", async () => {
    const handled: number[] = [];
    await start(spec(), async (e) => {
      handled.push(e.seq);
    });
    await fx.jsm
      .jetstream()
      .publish(`${fx.layout.eventPrefix}.exec.${ids.tenant}.ex-9.started`, '{"type":"exec.started"}');
    const good = await append("ex-1");
    const dead = await eventually("a dead letter", async () => (await readDeadLetters(fx.jsm, fx.layout)).at(0));
    expect(dead).toMatchObject({ kind: "terminated", streamSeq: 1 });
    expect(dead.reason).toMatch(/^contract-violation: event exec.started is invalid at stream sequence 1/);
    await eventually("the valid event handled", async () => (handled.includes(good.seq) ? true : undefined));
    expect(handled).toEqual([good.seq]);
  });

  it("stops after max_deliver failed deliveries and the dead-letter stream captures the max-deliveries advisory", async () => {
    const settled = await start(
      spec({ maxDeliver: 3 }),
      async () => {
        throw new Error("downstream still down");
      },
      [50],
    );
    const a = await append("ex-1");
    const dead = await eventually("a max-deliveries dead letter", async () =>
      (await readDeadLetters(fx.jsm, fx.layout)).at(0),
    );
    expect(dead).toMatchObject({
      kind: "max-deliveries",
      stream: fx.layout.eventStream,
      consumer: "reactor",
      streamSeq: a.seq,
      deliveries: 3,
    });
    expect(settled.map((s) => [s.deliveryCount, s.outcome])).toEqual([
      [1, { kind: "nak", delayMs: 50 }],
      [2, { kind: "nak", delayMs: 50 }],
      [3, { kind: "nak", delayMs: 0 }],
    ]);
    // nothing more is delivered: a later event is handled, the dead one never again
    const b = await append("ex-2");
    await eventually("the next event's first delivery", async () =>
      settled.some((s) => s.seq === b.seq) ? true : undefined,
    );
    expect(settled.filter((s) => s.seq === a.seq)).toHaveLength(3);
  });

  it("keeps a handler slower than ack_wait from being redelivered to a second instance by sending working() heartbeats", async () => {
    let calls = 0;
    const slow = async () => {
      calls += 1;
      await new Promise((r) => setTimeout(r, 7_000)); // the slow work itself (e.g. a Kubernetes call), not synchronisation
    };
    // ack_wait 3 s (heartbeats every 1 s): a loop held up 700 ms on a loaded machine no longer lets
    // ack_wait lapse, as it could at 1 s; the work still outlasts two of them.
    const s = spec({ ackWaitMs: 3_000 });
    const settled = await start(s, slow);
    // A second instance sharing the durable is idle and would take any redelivery after ack_wait.
    const twin = await runConsumer(
      fx.nc,
      fx.layout,
      s,
      async () => {
        await slow();
      },
      { onOutcome: (o) => settled.push({ ...o, at: Date.now() }) },
    );
    try {
      await append("ex-1");
      await eventually("the slow handler to finish", async () => (settled.length >= 1 ? true : undefined), 20_000);
      expect(calls).toBe(1);
      expect(settled).toHaveLength(1);
      expect(settled[0]).toMatchObject({ deliveryCount: 1, outcome: { kind: "ack" } });
      expect((await consumerInfo()).num_redelivered).toBe(0);
    } finally {
      await twin.stop();
    }
  });

  it("stops gracefully: the in-flight handler finishes and its ack is confirmed before stop resolves; nothing more is delivered", async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => {
      release = r;
    });
    let entered!: () => void;
    const inHandler = new Promise<void>((r) => {
      entered = r;
    });
    const handled: number[] = [];
    await start(spec(), async (e) => {
      entered();
      await gate;
      handled.push(e.seq);
    });
    await append("ex-1");
    await inHandler;
    const stopping = runner!.stop();
    release();
    await stopping;
    runner = undefined;
    expect(handled).toEqual([1]);
    await append("ex-2");
    const info = await consumerInfo();
    expect(info.ack_floor.stream_seq).toBe(1);
    expect(info.num_ack_pending).toBe(0);
    expect(info.num_pending).toBe(1);
  });

  it("hands each event to a free handler at once, up to its concurrency, while the others are busy", async () => {
    // The provisioner's shape: one runner, handlers that hold a delivery for seconds (a bind).
    // Before `concurrency`, it ran 132 runners of one at a time instead, and the server sometimes
    // gave an event to a pull of a busy runner: it waited there while others sat idle (a scratch
    // run of 132 such runners saw one wait 4.2 s; the P=20 proof, recovery scale-outs 3–15 s).
    let release!: () => void;
    const gate = new Promise<void>((r) => {
      release = r;
    });
    const entered: number[] = [];
    await ensureConsumer(fx.jsm, fx.layout, spec());
    runner = await runConsumer(
      fx.nc,
      fx.layout,
      spec(),
      async (e) => {
        entered.push(e.seq);
        await gate;
      },
      { concurrency: 4 },
    );
    try {
      for (const id of ["ex-1", "ex-2", "ex-3"]) await append(id);
      await eventually("three handlers holding an event each", async () => (entered.length === 3 ? true : undefined));
      expect([...entered].sort()).toEqual([1, 2, 3]);
    } finally {
      release();
    }
    await eventually("all acked", async () => ((await consumerInfo()).num_ack_pending === 0 ? true : undefined));
  });

  it("refuses to silently change an existing durable consumer's configuration", async () => {
    await ensureConsumer(fx.jsm, fx.layout, spec());
    await ensureConsumer(fx.jsm, fx.layout, spec()); // identical: idempotent
    const err = await ensureConsumer(fx.jsm, fx.layout, spec({ maxDeliver: 9 })).catch((e: unknown) => e);
    expect(isDroverError(err, "contract-violation")).toBe(true);
    expect((await consumerInfo()).config.max_deliver).toBe(3);
  });
});
