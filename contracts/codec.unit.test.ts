import { describe, expect, it } from "vitest";
import { allExampleEvents, exampleEvent, EXAMPLE_BUILDERS, ids } from "../test/support/example-events.ts";
import { decodeEvent, decodeJson, encodeEvent, encodeJson, parseEvent, validate } from "./codec.ts";
import { type DroverError, isDroverError } from "./errors.ts";
import { ALL_EVENTS, EVENT_TYPES, type DroverEvent, type EventOf } from "./events.ts";
import { Heartbeat } from "./heartbeat.ts";

const bytes = (v: unknown) => new TextEncoder().encode(typeof v === "string" ? v : JSON.stringify(v));

/** Runs `f`, expecting a contract-violation DroverError; returns it and proves `f` returned nothing. */
function violation(f: () => unknown): DroverError {
  let returned: unknown = "<not reached>";
  try {
    returned = f();
  } catch (e) {
    expect(isDroverError(e, "contract-violation"), `threw ${String(e)}`).toBe(true);
    return e as DroverError;
  }
  throw new Error(`expected a contract-violation, got a return value: ${String(returned)}`);
}

describe("every event type round-trips through the codec", () => {
  it("has exactly one example per catalogue event type", () => {
    expect(Object.keys(EXAMPLE_BUILDERS).sort()).toEqual([...EVENT_TYPES].sort());
    expect(new Set(EVENT_TYPES).size).toBe(ALL_EVENTS.length);
  });

  it.each(EVENT_TYPES)("decode(encode(%s)) equals the event", (type) => {
    const event = exampleEvent(type);
    expect(decodeEvent(encodeEvent(event), { seq: 1 })).toEqual(event);
  });

  it("applies schema defaults when encoding, so the stored bytes are the canonical form", () => {
    const e = exampleEvent("run.cancelled");
    // Deliberately not a DroverEvent (a default left out): what the encoder must complete.
    const withoutDefault = { ...e, data: {} } as unknown as DroverEvent;
    expect(decodeEvent(encodeEvent(withoutDefault))).toEqual({ ...e, data: { reason: "" } });
  });
});

describe("encode refuses an invalid event: nothing invalid is ever appended", () => {
  it("throws contract-violation and returns no bytes for an event whose data breaks its schema", () => {
    const e = exampleEvent("run.dispatched");
    const bad = { ...e, data: { ...e.data, runtimeInstanceId: "RT.1" } } as DroverEvent;
    const err = violation(() => encodeEvent(bad));
    expect(err.message).toMatch(
      /^event run\.dispatched is invalid: data\.runtimeInstanceId: RuntimeInstanceId must be lowercase/,
    );
    expect(err.retryable).toBe(false);
  });

  it("rejects unknown fields in the envelope and in data (schemas are strict)", () => {
    violation(() => encodeEvent({ ...exampleEvent("run.started"), extra: 1 } as DroverEvent));
    const e = exampleEvent("exec.completed");
    violation(() => encodeEvent({ ...e, data: { ...e.data, note: "x" } } as DroverEvent));
  });

  it("rejects a tenant-scoped event without tenantId (at runtime and in the type) but not a runtime event", () => {
    const { tenantId: _dropped, ...rest } = exampleEvent("run.completed");
    // @ts-expect-error tenantId is required on run events
    const typed: EventOf<"run.completed"> = rest;
    expect(violation(() => encodeEvent(typed)).message).toMatch(/tenantId/);
    const runtimeEvent = exampleEvent("runtime.draining");
    expect(runtimeEvent.tenantId).toBeUndefined();
    expect(decodeEvent(encodeEvent(runtimeEvent))).toEqual(runtimeEvent);
  });

  it("rejects a schemaVersion the catalogue does not define", () => {
    // Deliberately not a DroverEvent: the encoder's own validation is what is tested.
    violation(() => encodeEvent({ ...exampleEvent("run.started"), schemaVersion: 2 } as unknown as DroverEvent));
  });

  it("rejects a reason whose code is not catalogued", () => {
    const e = exampleEvent("run.rejected");
    // Deliberately not a DroverEvent: the encoder's own validation is what is tested.
    violation(() => encodeEvent({ ...e, data: { reason: { code: "because", detail: "" } } } as unknown as DroverEvent));
  });
});

describe("decode reports where the bad message is in the stream", () => {
  it("names the stream sequence and subject for bytes that are not JSON", () => {
    const err = violation(() => decodeEvent(bytes("{not json"), { seq: 4711, subject: "drover.run.t.r.started" }));
    expect(err.message).toMatch(/^event is invalid at stream sequence 4711: not JSON/);
    expect(err.details).toMatchObject({ seq: 4711, subject: "drover.run.t.r.started" });
  });

  it("names the stream sequence for JSON that breaks the event schema", () => {
    const e = exampleEvent("exec.step-completed");
    const err = violation(() => decodeEvent(bytes({ ...e, data: { ...e.data, attempt: 0 } }), { seq: 99 }));
    expect(err.message).toMatch(/^event exec\.step-completed is invalid at stream sequence 99: data\.attempt:/);
    expect(err.details).toMatchObject({ seq: 99, issues: [expect.stringMatching(/^data\.attempt: /)] });
  });

  it.each([
    ["an unknown type", { ...exampleEvent("run.started"), type: "run.exploded" }, /unknown event type "run\.exploded"/],
    ["no type", { eventId: "e-1" }, /unknown event type undefined/],
    ["a heartbeat (not a DROVER event)", { type: "heartbeat" }, /unknown event type "heartbeat"/],
    ["a prototype key as type", { type: "constructor" }, /unknown event type "constructor"/],
    ["null", null, /unknown event type/],
    ["an array", [1, 2], /unknown event type/],
  ])("rejects %s with contract-violation at its sequence", (_what, value, pattern) => {
    const err = violation(() => decodeEvent(bytes(value), { seq: 7 }));
    expect(err.message).toMatch(pattern);
    expect(err.message).toContain("at stream sequence 7");
  });

  it("rejects bytes that are not UTF-8 JSON", () => {
    violation(() => decodeEvent(new Uint8Array([0xff, 0xfe, 0x00]), { seq: 3 }));
  });

  it("parseEvent validates already-parsed values with the same rules", () => {
    expect(parseEvent(JSON.parse(JSON.stringify(exampleEvent("runtime.fenced"))))).toEqual(
      exampleEvent("runtime.fenced"),
    );
    violation(() => parseEvent({ ...exampleEvent("runtime.fenced"), occurredAt: "yesterday" }));
  });
});

describe("generic JSON codec (heartbeats, commands)", () => {
  const beat = {
    type: "heartbeat" as const,
    runtimeInstanceId: ids.runtime,
    hostIncarnation: ids.host,
    beat: 3,
    at: "2026-01-02T03:04:05.000Z",
    workers: 2,
    activeWorkers: 1,
    availableWorkers: 1,
    queuedRuns: 0,
    runningRuns: 1,
    availableSlots: 1,
    paused: false,
    draining: false,
  };

  it("round-trips a valid value and refuses to encode an invalid one", () => {
    expect(decodeJson(Heartbeat, encodeJson(Heartbeat, beat))).toEqual(beat);
    expect(violation(() => encodeJson(Heartbeat, { ...beat, beat: -1 }, "heartbeat")).message).toMatch(
      /^heartbeat is invalid: beat:/,
    );
  });

  it("reports the stream sequence on decode and refuses an endpoint in a heartbeat", () => {
    const err = violation(() =>
      decodeJson(Heartbeat, bytes({ ...beat, endpoint: "http://x" }), "heartbeat", { seq: 12 }),
    );
    expect(err.message).toMatch(/^heartbeat is invalid at stream sequence 12: .*endpoint/);
    expect(violation(() => decodeJson(Heartbeat, bytes("]"), "heartbeat", { seq: 13 })).message).toMatch(
      /at stream sequence 13: not JSON/,
    );
  });

  it("validate returns the parsed value with defaults", () => {
    expect(validate(Heartbeat, beat)).toEqual(beat);
    violation(() => validate(Heartbeat, {}));
  });
});

describe("the example events", () => {
  it("are all valid as built (no defaults needed to parse them)", () => {
    for (const e of allExampleEvents()) expect(parseEvent(e)).toEqual(e);
  });
});

describe("decodeEvent with a subject refuses an event its subject does not name (pure; proves no transport)", () => {
  const failed = exampleEvent("exec.failed");
  it("given a valid exec.failed on a run subject (found by make fuzz: it reached the run fold's exhaustiveness check), refuses it", () => {
    const v = violation(() => decodeEvent(bytes(failed), { seq: 3, subject: "x.drover.run.tenant-a.run-0001.failed" }));
    expect(v.message).toContain("names another aggregate or event");
    expect(v.message).toContain("at stream sequence 3");
  });
  it("given the right aggregate with another event name, refuses it; given its own subject under any prefix, decodes it", () => {
    violation(() => decodeEvent(bytes(failed), { subject: "drover.exec.tenant-a.ex-0001.completed" }));
    expect(decodeEvent(bytes(failed), { subject: "drover.exec.tenant-a.ex-0001.failed" })).toEqual(failed);
    expect(decodeEvent(bytes(failed), { subject: "e2e-ab.drover.exec.tenant-a.ex-0001.failed" })).toEqual(failed);
    const retired = exampleEvent("runtime.retired");
    expect(decodeEvent(bytes(retired), { subject: "drover.runtime.rt-1.retired" })).toEqual(retired);
    violation(() => decodeEvent(bytes(retired), { subject: "drover.run.t.rt-1.retired" }));
  });
});
