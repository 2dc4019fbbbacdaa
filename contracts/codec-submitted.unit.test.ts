import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { allExampleEvents } from "../test/support/example-events.ts";
import { DagMemo, parseDag } from "./checked-dag.ts";
import { decodeEvent, encodeEvent } from "./codec.ts";
import { submittedFast } from "./codec-submitted.ts";
import type { DagDefinition } from "./dag.ts";
import type { DroverEvent } from "./events.ts";
import { RunSubmitted } from "./events-run.ts";
import { isPlainJson } from "./plain-json.ts";

const example = allExampleEvents().find((e) => e.type === "run.submitted")!;
const dagOf = (dag: unknown): DagDefinition | undefined => {
  const r = parseDag(dag);
  return r.success ? r.data : undefined;
};
// An example with one field, in the envelope or the data, replaced or removed, or an input set.
const variant = fc.record({
  inData: fc.boolean(),
  key: fc.nat(),
  remove: fc.boolean(),
  value: fc.oneof(fc.jsonValue(), fc.string(), fc.integer(), fc.constant(undefined)),
  input: fc.option(fc.oneof(fc.jsonValue(), fc.anything({ withDate: true, withNullPrototype: true })), {
    nil: undefined,
  }),
});
type Variant = typeof variant extends fc.Arbitrary<infer T> ? T : never;
const build = ({ inData, key, remove, value, input }: Variant) => {
  const event = structuredClone(example) as unknown as Record<string, unknown>;
  const data = event.data as Record<string, unknown>;
  if (input !== undefined) data.input = input;
  const target = inData ? data : event;
  const k = Object.keys(target)[key % Object.keys(target).length]!;
  if (remove) delete target[k];
  else target[k] = value;
  return event;
};

describe("run.submitted on zod's compiled path (codec-submitted.ts), the DAG and input checked apart", () => {
  it("answers exactly what RunSubmitted answers, whenever the input is JSON it keeps as it is (bounded property)", () => {
    fc.assert(
      fc.property(variant, (v) => {
        const event = build(v);
        const full = RunSubmitted.schema.safeParse(structuredClone(event));
        const fast = submittedFast(structuredClone(event), dagOf);
        if (fast !== undefined) expect(full.success && full.data).toEqual(fast);
        const input = (event.data as { input?: unknown } | undefined)?.input;
        if (full.success && (input === undefined || isPlainJson(input))) expect(fast).toBeDefined();
      }),
      { numRuns: 2000 },
    );
  });

  it("encodes a submission with a checked DAG to the bytes the full schema gives", () => {
    const dag = dagOf(example.data.dag)!;
    for (const input of [undefined, { a: [1, "two", null] }, "text"]) {
      const event = { ...example, data: { ...example.data, dag, ...(input === undefined ? {} : { input }) } };
      expect(submittedFast(event, () => dag)).toBeDefined(); // the compiled path takes it
      const expected = JSON.stringify(RunSubmitted.schema.parse(event));
      expect(new TextDecoder().decode(encodeEvent(event as DroverEvent))).toBe(expected);
    }
  });

  it("decodes a stored submission through the DAG memo as it decodes it without", () => {
    const bytes = new TextEncoder().encode(JSON.stringify({ ...example, data: { ...example.data, input: { n: 1 } } }));
    const at = { seq: 7, subject: `drover.run.${example.tenantId}.${example.data.sharedRunId}.submitted` };
    const memo = new DagMemo();
    expect(decodeEvent(bytes, at, memo)).toEqual(decodeEvent(bytes, at));
    expect(decodeEvent(bytes, at, memo)).toEqual(decodeEvent(bytes, at)); // the memo's second look
  });
});
