import { afterEach, beforeEach, describe, expect, inject, it } from "vitest";
import { isDroverError } from "../../contracts/index.ts";
import { eventStreamConfig, heartbeatStreamConfig } from "../../streams/definitions.ts";
import { ensureStreams } from "../../streams/ensure-streams.ts";
import { taggedLayout } from "../../streams/layout.ts";
import { assertServerVersion } from "../../streams/server-version.ts";
import { uniqueName } from "../support/isolation.ts";
import { freshStreams, type StreamsFixture } from "../support/streams.ts";

describe("stream definitions on a real nats-server", () => {
  let fx: StreamsFixture;
  beforeEach(async () => {
    fx = await freshStreams(inject("natsUrl"));
  });
  afterEach(async () => {
    await fx.close();
  });

  it("accepts the real server the tests run against (>= 2.12), reading its version from INFO", () => {
    expect(fx.nc.info?.version).toMatch(/^2\.\d+\.\d+/);
    expect(() => assertServerVersion(fx.nc.info?.version)).not.toThrow();
  });

  it("creates the event stream as an immutable, atomic, direct-readable log with a dedupe window of at least 2 minutes", async () => {
    const c = (await fx.jsm.streams.info(fx.layout.eventStream)).config;
    expect(c).toMatchObject({
      storage: "file",
      deny_delete: true,
      deny_purge: true,
      allow_atomic: true,
      allow_direct: true,
      max_msgs_per_subject: -1,
      subjects: [`${fx.layout.eventPrefix}.>`],
    });
    expect(c.duplicate_window).toBeGreaterThanOrEqual(120e9);
    const hb = (await fx.jsm.streams.info(fx.layout.heartbeatStream)).config;
    expect(hb.max_msgs_per_subject).toBe(3);
    expect(hb.max_age).toBeGreaterThan(0);
  });

  it("is idempotent: ensuring the same layout again changes nothing", async () => {
    const before = await fx.jsm.streams.info(fx.layout.eventStream);
    await ensureStreams(fx.jsm, fx.layout);
    await Promise.all([ensureStreams(fx.jsm, fx.layout), ensureStreams(fx.jsm, fx.layout)]);
    const after = await fx.jsm.streams.info(fx.layout.eventStream);
    expect(after.created).toBe(before.created);
    expect(after.config).toEqual(before.config);
  });

  it("refuses to adopt an existing stream whose settings differ, naming the differences, and leaves it unchanged", async () => {
    const layout = taggedLayout(uniqueName("drift"));
    const drifted = { ...eventStreamConfig(layout), deny_purge: false, max_msgs_per_subject: 10 };
    await fx.jsm.streams.add(drifted);
    try {
      const err = await ensureStreams(fx.jsm, layout).catch((e: unknown) => e);
      expect(isDroverError(err, "contract-violation")).toBe(true);
      expect((err as Error).message).toMatch(/deny_purge: want true, have false/);
      expect((err as Error).message).toMatch(/max_msgs_per_subject: want -1, have 10/);
      expect((await fx.jsm.streams.info(layout.eventStream)).config.deny_purge).toBe(false);
    } finally {
      await fx.jsm.streams.delete(layout.eventStream);
    }
  });

  it("has the server refuse message deletion and purge of the event stream", async () => {
    const js = fx.jsm.jetstream();
    await js.publish(`${fx.layout.eventPrefix}.run.t.r.submitted`, "{}");
    await expect(fx.jsm.streams.deleteMessage(fx.layout.eventStream, 1)).rejects.toMatchObject({ code: 10057 });
    await expect(fx.jsm.streams.purge(fx.layout.eventStream)).rejects.toMatchObject({ code: 10110 });
    await expect(
      fx.jsm.streams.purge(fx.layout.eventStream, { filter: `${fx.layout.eventPrefix}.run.>` }),
    ).rejects.toMatchObject({ code: 10110 });
    // and the protection cannot be switched off afterwards
    const cfg = (await fx.jsm.streams.info(fx.layout.eventStream)).config;
    await expect(fx.jsm.streams.update(fx.layout.eventStream, { ...cfg, deny_purge: false })).rejects.toThrow();
    expect((await fx.jsm.streams.info(fx.layout.eventStream)).state.messages).toBe(1);
  });

  it("keeps only the last few heartbeats per runtime", async () => {
    const js = fx.jsm.jetstream();
    for (let i = 0; i < 6; i++) await js.publish(`${fx.layout.heartbeatPrefix}.rt-1`, String(i));
    await js.publish(`${fx.layout.heartbeatPrefix}.rt-2`, "x");
    expect((await fx.jsm.streams.info(fx.layout.heartbeatStream)).state.messages).toBe(
      heartbeatStreamConfig(fx.layout).max_msgs_per_subject! + 1,
    );
  });
});
