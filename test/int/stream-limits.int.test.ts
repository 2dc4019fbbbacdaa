import { jetstream } from "@nats-io/jetstream";
import { afterEach, beforeEach, describe, expect, inject, it } from "vitest";
import { setupNats } from "../../platform/nats-setup.ts";
import { deadLetterStreamConfig, heartbeatStreamConfig } from "../../streams/definitions.ts";
import { readDeadLetters } from "../../streams/dead-letters.ts";
import { ensureStreams } from "../../streams/ensure-streams.ts";
import { streamLimits } from "../../streams/limits.ts";
import { freshStreams, type StreamsFixture } from "../support/streams.ts";

/**
 * The heartbeat and dead-letter streams' limits on a real nats-server (docs/retention.md
 * "Heartbeats and dead letters"): an existing deployment whose streams predate the limits starts
 * unchanged, setup brings the limits in place, and a bounded dead-letter stream still lists its
 * newest give-ups.
 */
const MAX_DELIVERIES = "io.nats.jetstream.advisory.v1.max_deliver";

describe("heartbeat and dead-letter stream limits (real nats-server)", () => {
  let fx: StreamsFixture;
  beforeEach(async () => {
    fx = await freshStreams(inject("natsUrl"), "lim");
  });
  afterEach(async () => {
    await fx.close();
  });

  /** Replaces the fixture's heartbeat and dead-letter streams with the definitions before limits existed. */
  async function recreateWithoutLimits(): Promise<void> {
    const { max_age: _a, max_msgs: _m, max_bytes: _b, ...oldDlq } = deadLetterStreamConfig(fx.layout);
    const { max_bytes: _hb, ...oldHb } = heartbeatStreamConfig(fx.layout);
    for (const c of [oldDlq, oldHb]) {
      await fx.jsm.streams.delete(c.name);
      await fx.jsm.streams.add(c);
    }
  }

  it("starts a service on streams that predate the limits without changing them; setup then sets the limits in place", async () => {
    await recreateWithoutLimits();
    const before = await fx.jsm.streams.info(fx.layout.deadLetterStream);
    expect(before.config.max_msgs).toBe(-1);
    await ensureStreams(fx.jsm, fx.layout); // what every service does at start-up
    expect((await fx.jsm.streams.info(fx.layout.deadLetterStream)).config).toEqual(before.config);

    const limits = streamLimits({ deadLetterMaxMsgs: 50, heartbeatMaxBytes: 1024 * 1024 });
    await setupNats(fx.jsm, fx.layout, undefined, limits);
    const dlq = (await fx.jsm.streams.info(fx.layout.deadLetterStream)).config;
    expect(dlq).toMatchObject({ max_msgs: 50, max_bytes: limits.deadLetterMaxBytes });
    expect(dlq.max_age).toBe(limits.deadLetterMaxAgeMs * 1e6);
    const hb = (await fx.jsm.streams.info(fx.layout.heartbeatStream)).config;
    expect(hb).toMatchObject({ max_bytes: 1024 * 1024, max_msgs_per_subject: 3 });
    // services started before or after setup accept whatever limits setup chose
    await expect(ensureStreams(fx.jsm, fx.layout)).resolves.toHaveLength(3);
    // and setup with the same limits again changes nothing
    const again = await fx.jsm.streams.info(fx.layout.deadLetterStream);
    await setupNats(fx.jsm, fx.layout, undefined, limits);
    expect((await fx.jsm.streams.info(fx.layout.deadLetterStream)).config).toEqual(again.config);
  });

  it("keeps only the newest dead letters at the count limit, and readDeadLetters lists exactly those from sequence 1", async () => {
    await setupNats(fx.jsm, fx.layout, undefined, streamLimits({ deadLetterMaxMsgs: 3 }));
    const js = jetstream(fx.nc);
    for (let i = 1; i <= 7; i++)
      await js.publish(
        `$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.${fx.layout.eventStream}.c${i}`,
        JSON.stringify({ type: MAX_DELIVERIES, stream: fx.layout.eventStream, consumer: `c${i}`, stream_seq: i }),
      );
    const state = (await fx.jsm.streams.info(fx.layout.deadLetterStream)).state;
    expect(state).toMatchObject({ messages: 3, first_seq: 5, last_seq: 7 });
    const listed = await readDeadLetters(fx.jsm, fx.layout);
    expect(listed.map((d) => [d.seq, d.consumer, d.streamSeq])).toEqual([
      [5, "c5", 5],
      [6, "c6", 6],
      [7, "c7", 7],
    ]);
  });

  it("refuses a drifted guarantee of the dead-letter stream even though its limits are configuration", async () => {
    const c = (await fx.jsm.streams.info(fx.layout.deadLetterStream)).config;
    await fx.jsm.streams.update(fx.layout.deadLetterStream, { ...c, allow_direct: false });
    await expect(ensureStreams(fx.jsm, fx.layout)).rejects.toThrow(/allow_direct: want true, have false/);
  });
});
