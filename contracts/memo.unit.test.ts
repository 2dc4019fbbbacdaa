import { afterEach, describe, expect, it, vi } from "vitest";
import { z } from "zod";
import { defineEvent } from "./define-event.ts";
import { EnvelopeBase } from "./envelope.ts";
import { memo } from "./memo.ts";

// Pure: values built in memory; proves no transport.
describe("memo and event schemas built on first use (pure, no transport)", () => {
  afterEach(() => void vi.restoreAllMocks());

  it("builds on the first call only, and again after a build that threw", () => {
    const build = vi.fn(() => ({ built: true }));
    const value = memo(build);
    expect(build).not.toHaveBeenCalled();
    const first = value();
    expect(value()).toBe(first);
    expect(build).toHaveBeenCalledTimes(1);

    let calls = 0;
    const flaky = memo(() => {
      if (++calls === 1) throw new Error("first build fails");
      return calls;
    });
    expect(() => flaky()).toThrow("first build fails");
    expect(flaky()).toBe(2);
    expect(flaky()).toBe(2);
  });

  it("builds an event's data schema and envelope when its schema is first read, once, and it validates as before", () => {
    const extend = vi.spyOn(EnvelopeBase, "extend");
    const data = vi.fn(() => z.object({ n: z.number().int() }).strict());
    const def = defineEvent("runtime", "memo-test", data);
    expect(extend).not.toHaveBeenCalled();
    expect(data).not.toHaveBeenCalled();
    expect(def.type).toBe("runtime.memo-test");
    const schema = def.schema;
    expect(def.schema).toBe(schema);
    expect(extend).toHaveBeenCalledTimes(1);
    expect(data).toHaveBeenCalledTimes(1);
    const event = {
      eventId: "ev-memo-1",
      type: "runtime.memo-test",
      schemaVersion: 1,
      occurredAt: "2026-12-07T08:00:00.000Z",
      correlationId: "c-1",
      causationId: "c-0",
      writer: { service: "runtime", instanceId: "rt-1" },
      data: { n: 1 },
    };
    const parsed = schema.safeParse(event);
    expect(parsed.error?.issues ?? []).toEqual([]);
    expect(schema.safeParse({ ...event, data: { n: 1.5 } }).success).toBe(false);
    expect(schema.safeParse({ ...event, extra: 1 }).success).toBe(false);
    expect(schema.safeParse({ ...event, type: "runtime.other" }).success).toBe(false);
  });
});
