import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { allExampleEvents } from "../test/support/example-events.ts";
import { decodeEvent, parseEvent } from "./codec.ts";
import { fastStepCompleted } from "./codec-step-fast.ts";
import { ExecStepCompleted } from "./events-exec.ts";

/**
 * The hand-written `exec.step-completed` check (codec-step-fast.ts) may only answer what the full
 * parser answers: for any value, either nothing (the caller parses in full) or exactly the full
 * parse's value, key order included; never a value the full parser refuses.
 */
const full = (value: unknown): { ok: true; json: string; data: unknown } | { ok: false } => {
  try {
    const data = parseEvent(value);
    return { ok: true, json: JSON.stringify(data), data };
  } catch {
    return { ok: false };
  }
};
const agrees = (value: unknown): boolean => {
  const fast = fastStepCompleted(value);
  if (fast === undefined) return true;
  const f = full(value);
  expect(f.ok).toBe(true);
  if (f.ok) {
    expect(fast).toEqual(f.data);
    expect(JSON.stringify(fast)).toBe(f.json);
  }
  return true;
};

const FIXTURES = join(import.meta.dirname, "../test/fixtures");
/** Every recorded event of the fixture logs (test/fixtures/*.jsonl), as stored. */
const recorded = (): { subject: string; event: unknown }[] =>
  readdirSync(FIXTURES)
    .filter((f) => f.endsWith(".jsonl"))
    .flatMap((f) =>
      readFileSync(join(FIXTURES, f), "utf8")
        .split("\n")
        .filter((l) => l.trim() !== "")
        .map((l) => JSON.parse(l) as { subject: string; event: unknown }),
    );

const example = allExampleEvents().find((e) => e.type === "exec.step-completed")!;
const stepEvents = (): Record<string, unknown>[] => [
  example as unknown as Record<string, unknown>,
  ...recorded()
    .map((r) => r.event as Record<string, unknown>)
    .filter((e) => e.type === "exec.step-completed"),
];

/** `data` with `ref` in place of its output, in the schema's key order. */
const withRef = (data: Record<string, unknown>, ref: object): Record<string, unknown> =>
  Object.fromEntries(
    Object.entries(data).map(([k, v]) => (k === "output" || k === "outputRef" ? ["outputRef", ref] : [k, v])),
  );

describe("exec.step-completed checked by hand decodes as the full parser does", () => {
  it("checks the schema's keys in the schema's order (envelope, writer, data, outputRef)", () => {
    const shape = ExecStepCompleted.schema.shape;
    const keysOf = (s: { shape: object }) => Object.keys(s.shape);
    const inner = (s: unknown) => (s as { _zod: { def: { innerType: unknown } } })._zod.def.innerType;
    // The order the hand check walks is the one zod writes; a schema change must show here.
    expect(keysOf(ExecStepCompleted.schema)).toEqual([
      "eventId",
      "type",
      "schemaVersion",
      "occurredAt",
      "tenantId",
      "correlationId",
      "causationId",
      "writer",
      "data",
    ]);
    expect(keysOf(shape.writer)).toEqual(["service", "instanceId", "runtimeInstanceId", "hostIncarnation", "epoch"]);
    const data = shape.data as unknown as { shape: Record<string, unknown> };
    expect(keysOf(data)).toEqual([
      "stepId",
      "attempt",
      "output",
      "outputRef",
      "outputDigest",
      "durationMs",
      "cacheKey",
    ]);
    expect(keysOf(inner(data.shape.outputRef) as { shape: object })).toEqual(["bucket", "name", "size", "digest"]);
  });

  it("answers for every step completion of the example corpus and the recorded fixtures, with the full parse's value", () => {
    const events = stepEvents();
    expect(events.length).toBeGreaterThan(50);
    for (const e of events) {
      expect(fastStepCompleted(e)).toBeDefined();
      agrees(e);
    }
  });

  it("decodes every recorded fixture event, of any type, to the full parse's value (decodeEvent)", () => {
    for (const r of recorded()) {
      const bytes = new TextEncoder().encode(JSON.stringify(r.event));
      const f = full(r.event);
      if (!f.ok) {
        expect(() => decodeEvent(bytes, { subject: r.subject })).toThrow();
        continue;
      }
      expect(JSON.stringify(decodeEvent(bytes, { subject: r.subject }))).toBe(f.json);
    }
  });

  it("never answers for a value the full parser refuses or rewrites (one field replaced, removed or added; bounded property)", () => {
    const events = stepEvents();
    const where = ["envelope", "data", "writer", "outputRef"] as const;
    const arb = fc.record({
      i: fc.nat(events.length - 1),
      at: fc.constantFrom(...where),
      key: fc.oneof(fc.nat(), fc.string()),
      remove: fc.boolean(),
      value: fc.oneof(
        fc.jsonValue(),
        fc.string(),
        fc.integer(),
        fc.double(),
        fc.constant(undefined),
        fc.constant(-0),
        fc.constant(2 ** 53),
        fc.constant("a".repeat(64)),
        fc.constant("A".repeat(64)),
        fc.constant("x".repeat(64)),
        // Each length bound of the schema, just in and just out.
        fc.constantFrom(...[0, 1, 63, 64, 65, 128, 129, 260, 261, 512, 513].map((n) => "a".repeat(n))),
        fc.constant("2026-12-01T10:00:00Z"),
        fc.constant("2026-12-01T10:00:00+01:00"),
        fc.constant({ bucket: "b", name: "n", size: 1, digest: "a".repeat(64) }),
      ),
    });
    fc.assert(
      fc.property(arb, ({ i, at, key, remove, value }) => {
        const event = structuredClone(events[i]!);
        const data = event.data as Record<string, unknown>;
        const target = (
          at === "envelope"
            ? event
            : at === "data"
              ? data
              : at === "writer"
                ? event.writer
                : ((event.data = withRef(data, { bucket: "b", name: "n", size: 1, digest: "a".repeat(64) }))
                    .outputRef as object)
        ) as Record<string, unknown>;
        const keys = Object.keys(target);
        const k = typeof key === "number" ? (keys[key % Math.max(keys.length, 1)] ?? "extra") : key;
        if (remove) delete target[k];
        else target[k] = value;
        return agrees(event);
      }),
      { numRuns: 3000 },
    );
  });

  it("answers as the full parser at every length bound, for every field of every object of the event", () => {
    const lengths = [0, 1, 63, 64, 65, 128, 129, 260, 261, 512, 513];
    const ref = { bucket: "b", name: "n", size: 1, digest: "a".repeat(64) };
    for (const base of stepEvents().slice(0, 3))
      for (const at of ["envelope", "data", "writer", "outputRef"] as const) {
        const keys = Object.keys(at === "outputRef" ? ref : at === "envelope" ? base : (base[at] as object));
        for (const key of keys)
          for (const n of lengths) {
            const event = structuredClone(base);
            const data = event.data as Record<string, unknown>;
            if (at === "outputRef") event.data = withRef(data, { ...ref, [key]: "a".repeat(n) });
            else (at === "envelope" ? event : (event[at] as Record<string, unknown>))[key] = "a".repeat(n);
            agrees(event);
          }
      }
  });

  it("leaves keys out of order, a second output and every other event type to the full parser", () => {
    const e = stepEvents()[0]!;
    const { eventId, ...rest } = e;
    expect(fastStepCompleted({ ...rest, eventId })).toBeUndefined();
    const data = e.data as Record<string, unknown>;
    const ref = { bucket: "b", name: "n", size: 1, digest: "a".repeat(64) };
    expect(fastStepCompleted({ ...e, data: { ...data, outputRef: ref } })).toBeUndefined();
    expect(full({ ...e, data: { ...data, outputRef: ref } }).ok).toBe(false);
    for (const other of allExampleEvents().filter((x) => x.type !== "exec.step-completed"))
      expect(fastStepCompleted(other)).toBeUndefined();
  });
});
