import { afterEach, beforeEach, describe, expect, inject, it } from "vitest";
import { connectHarness } from "../../platform/nats-auth/server-keys.ts";
import { ackedPublisher } from "../../streams/acked-publish.ts";
import { isTransportFailure, jsCode, JS } from "../../streams/nats-errors.ts";
import { TimeoutError } from "@nats-io/transport-node";
import { freshStreams, type StreamsFixture } from "../support/streams.ts";

// The event store's own publish-and-ack path (streams/acked-publish.ts) against a real nats-server:
// the same acks and the same failure classes as the client's js.publish.
describe("acked publish: JetStream acks and refusals without the client's request multiplexer (real nats-server)", () => {
  let fx: StreamsFixture;
  beforeEach(async () => {
    fx = await freshStreams(inject("natsUrl"), "ack");
  });
  afterEach(async () => {
    await fx.close();
  });

  const data = new TextEncoder().encode("{}");
  const expect_ = (seq: number, subject: string) => ({
    streamName: fx.layout.eventStream,
    lastSubjectSequence: seq,
    lastSubjectSequenceSubject: `${subject}.>`,
  });

  it("acks a conditional publish with its sequence, refuses a stale expectation with 10071, and answers many in flight each with its own ack", async () => {
    const publish = ackedPublisher(fx.nc);
    const agg = `${fx.layout.eventPrefix}.exec.t1.ex-1`;
    const a = await publish(`${agg}.started`, data, { msgID: "m1", timeout: 5000, expect: expect_(0, agg) });
    expect(a).toMatchObject({ stream: fx.layout.eventStream, seq: 1, duplicate: false });
    const stale = await publish(`${agg}.resumed`, data, { msgID: "m2", timeout: 5000, expect: expect_(0, agg) }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(jsCode(stale)).toBe(JS.wrongLastSequence);
    // Many in flight at once: each gets its own ack.
    const many = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        publish(`${fx.layout.eventPrefix}.exec.t1.ex-m${i}.started`, data, {
          msgID: `many-${i}`,
          timeout: 5000,
          expect: expect_(0, `${fx.layout.eventPrefix}.exec.t1.ex-m${i}`),
        }),
      ),
    );
    expect(new Set(many.map((m) => m.seq)).size).toBe(50);
  });

  it("a subject no stream stores fails as a transport failure (no responders), and a closed connection fails every publish", async () => {
    const publish = ackedPublisher(fx.nc);
    const none = await publish("nowhere.at.all", data, {
      msgID: "x",
      timeout: 5000,
      expect: expect_(0, "nowhere"),
    }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(isTransportFailure(none)).toBe(true);
    const nc = await connectHarness({ servers: inject("natsUrl") });
    const closing = ackedPublisher(nc);
    await nc.close();
    const closed = await closing(`${fx.layout.eventPrefix}.exec.t1.ex-c.started`, data, {
      msgID: "c",
      timeout: 5000,
      expect: expect_(0, `${fx.layout.eventPrefix}.exec.t1.ex-c`),
    }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(isTransportFailure(closed)).toBe(true);
  });

  it("a publish nobody answers fails with TimeoutError at its own deadline, a shorter one sent later first, and the publisher goes on acking", async () => {
    const publish = ackedPublisher(fx.nc);
    // A listener that never replies: the publish has a responder (no 503) and never gets an ack.
    const silent = `ack-silent.${Date.now()}`;
    const sub = fx.nc.subscribe(`${silent}.>`);
    const t0 = performance.now();
    const when = (p: Promise<unknown>) =>
      p.then(
        () => ({ error: undefined, ms: performance.now() - t0 }),
        (error: unknown) => ({ error, ms: performance.now() - t0 }),
      );
    // The long deadline far from the short one: a sweep held until the long deadline fails the short
    // publish at >= 1.5 s, a right one at 100 ms plus whatever the loop lags on a loaded machine.
    const long = when(publish(`${silent}.a`, data, { msgID: "s1", timeout: 1_500, expect: expect_(0, silent) }));
    const short = when(publish(`${silent}.b`, data, { msgID: "s2", timeout: 100, expect: expect_(0, silent) }));
    const [l, s] = await Promise.all([long, short]);
    expect(s.error).toBeInstanceOf(TimeoutError);
    expect(l.error).toBeInstanceOf(TimeoutError);
    expect(s.ms).toBeGreaterThanOrEqual(99);
    expect(s.ms).toBeLessThan(1_400); // not held until the earlier, longer deadline
    expect(l.ms).toBeGreaterThanOrEqual(1_499);
    sub.unsubscribe();
    const agg = `${fx.layout.eventPrefix}.exec.t1.ex-after`;
    const a = await publish(`${agg}.started`, data, { msgID: "after", timeout: 5000, expect: expect_(0, agg) });
    expect(a.seq).toBeGreaterThan(0);
  });
});
