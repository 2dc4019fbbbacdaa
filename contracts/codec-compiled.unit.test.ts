import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { z } from "zod";
import { allExampleEvents } from "../test/support/example-events.ts";
import { compiledEventSchema, type EventParser } from "./codec.ts";
import { EVENT_DEFINITIONS, EVENT_TYPES } from "./events.ts";

/**
 * The codec checks events with zod's compiled fast path (`z.compile`, codec.ts). It must answer
 * exactly as zod's runtime parser does: the same acceptance, the same parsed value (defaults
 * applied), and for a refusal the same issues (the dead-letter reasons name them).
 */
const answer = (schema: EventParser, value: unknown) => {
  const r = schema.safeParse(value);
  return r.success ? { ok: true, data: r.data } : { ok: false, issues: r.error.issues };
};
const runtimeOf = (type: string) => EVENT_DEFINITIONS.get(type)!.schema as z.ZodType;
const agree = (type: string, value: unknown) =>
  expect(answer(compiledEventSchema(type)!, value)).toEqual(answer(runtimeOf(type), value));

describe("the compiled event schemas answer as zod's runtime parser (bounded property)", () => {
  it("accepts every example event with the same parsed value", () => {
    const examples = allExampleEvents();
    expect(new Set(examples.map((e) => e.type))).toEqual(new Set(EVENT_TYPES));
    for (const e of examples) {
      expect(answer(compiledEventSchema(e.type)!, e).ok).toBe(true);
      agree(e.type, e);
    }
  });

  it("gives the same answer for example events with one field, in the envelope or the data, replaced or removed", () => {
    const examples = allExampleEvents();
    const arb = fc.record({
      i: fc.nat(examples.length - 1),
      inData: fc.boolean(),
      key: fc.nat(),
      remove: fc.boolean(),
      value: fc.oneof(fc.jsonValue(), fc.string(), fc.integer(), fc.constant(undefined)),
    });
    fc.assert(
      fc.property(arb, ({ i, inData, key, remove, value }) => {
        const event: Record<string, unknown> = structuredClone(examples[i]!) as unknown as Record<string, unknown>;
        const target = (inData && typeof event.data === "object" && event.data ? event.data : event) as Record<
          string,
          unknown
        >;
        const keys = Object.keys(target);
        const k = keys[key % Math.max(keys.length, 1)] ?? "extra";
        if (remove) delete target[k];
        else target[k] = value;
        agree(examples[i]!.type, event); // the schema of the example's type, whatever became of the field
      }),
      { numRuns: 2000 },
    );
  });

  it("gives the same answer for arbitrary values under every event type", () => {
    const arb = fc.record({ type: fc.constantFrom(...EVENT_TYPES), value: fc.jsonValue() });
    fc.assert(
      fc.property(arb, ({ type, value }) => {
        agree(type, value);
        agree(type, typeof value === "object" && value !== null ? { ...value, type } : value);
      }),
      { numRuns: 500 },
    );
  });
});

for (const type of ["exec.step-completed", "run.completed"] as const)
  describe(`${type}: its output checked without zod's recursive JSON parser (codec.ts withPlainOutput)`, () => {
    const example = allExampleEvents().find((e) => e.type === type)!;
    const withOutput = (output: unknown) => ({ ...example, data: { ...example.data, output } });

    it("takes a plain JSON output as it is, not as the recursive parser's copy", () => {
      const output = { digest: "a".repeat(64), nested: [1, "two", { three: null }] };
      const r = compiledEventSchema(type)!.safeParse(withOutput(output));
      expect(r.success && (r.data as { data: { output?: unknown } }).data.output).toBe(output);
    });

    it("answers as the runtime parser for any output, JSON or not, with or without an outputRef", () => {
      const ref = { bucket: "outputs", name: "o", size: 1, digest: "a".repeat(64) };
      const output = fc.oneof(
        fc.jsonValue(),
        fc.anything({ withNullPrototype: true, withSparseArray: true, withDate: true }),
      );
      fc.assert(
        fc.property(output, fc.boolean(), (o, both) => {
          const event = withOutput(o);
          agree(type, both ? { ...event, data: { ...event.data, outputRef: ref } } : event);
        }),
        { numRuns: 2000 },
      );
    });
  });
