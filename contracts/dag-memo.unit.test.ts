import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { exampleEvent } from "../test/support/example-events.ts";
import { DagMemo } from "./checked-dag.ts";
import { decodeEvent } from "./codec.ts";

// Pure: the boundary is that decoding a `run.submitted` through a DagMemo gives exactly what the full
// decode gives (the same value, the same refusal with the same message), the DAG parsed once per
// distinct DAG, and the remembered DAG shared only frozen.
const encoder = new TextEncoder();
const subject = (e: { tenantId?: string; data: { sharedRunId: string } }) =>
  `drover.run.${e.tenantId}.${e.data.sharedRunId}.submitted`;
const example = exampleEvent("run.submitted");
const submitted = (dag: unknown, data: Record<string, unknown> = {}) => ({
  ...example,
  data: { ...example.data, dag, ...data },
});
const bytesOf = (e: unknown) => encoder.encode(JSON.stringify(e));
/** The decode's value, or the message it was refused with. */
const outcome = (bytes: Uint8Array, dags?: DagMemo) => {
  try {
    return { value: decodeEvent(bytes, { seq: 7, subject: subject(example) }, dags) };
  } catch (e) {
    return { refused: (e as Error).message };
  }
};
const chain = (n: number, params: Record<string, unknown> = {}) => ({
  name: `chain-${n}`,
  steps: Array.from({ length: n }, (_, i) => ({
    id: `s${i}`,
    kind: "compute",
    ...(i > 0 ? { dependsOn: [`s${i - 1}`] } : {}),
    params,
  })),
});
const cyclic = {
  steps: [
    { id: "a", kind: "compute", dependsOn: ["b"], params: {} },
    { id: "b", kind: "compute", dependsOn: ["a"], params: {} },
  ],
};

describe("run.submitted decoded through a DagMemo (pure)", () => {
  it("gives the full decode's value, defaults applied, and parses an equal DAG only once", () => {
    const memo = new DagMemo();
    const first = outcome(bytesOf(submitted(chain(3))), memo);
    expect(first).toEqual(outcome(bytesOf(submitted(chain(3)))));
    expect((first.value as typeof example).data.dag.steps[0]!.params).toEqual({ durationMs: 0, busy: false });
    const again = outcome(bytesOf(submitted(chain(3), { sharedRunId: "run-other" })), memo);
    expect(memo.size).toBe(1);
    // The one checked DAG is shared, and frozen: no decoder of it can change what the next one gets.
    const dag = (again.value as typeof example).data.dag;
    expect(dag).toBe((first.value as typeof example).data.dag);
    expect(() => (dag.steps as unknown[]).push({ id: "x" })).toThrow(TypeError);
  });

  it("refuses an invalid DAG, or an invalid field around a remembered DAG, with the full decode's message", () => {
    const memo = new DagMemo();
    outcome(bytesOf(submitted(chain(2))), memo);
    for (const e of [
      submitted(cyclic),
      submitted(chain(2), { sharedRunId: "Not An Id" }),
      submitted(chain(2), { extra: 1 }),
      { ...submitted(chain(2)), eventId: "" },
      { ...submitted(chain(2)), data: [] },
    ]) {
      const got = outcome(bytesOf(e), memo);
      expect(got.refused).toBeDefined();
      expect(got).toEqual(outcome(bytesOf(e)));
    }
    expect(memo.size).toBe(1);
  });

  it("keeps at most maxEntries DAGs (least recently used out) and none longer than maxChars", () => {
    const memo = new DagMemo(2, 2000);
    for (const n of [1, 2, 1, 3]) outcome(bytesOf(submitted(chain(n))), memo);
    expect(memo.size).toBe(2);
    const long = chain(40, { durationMs: 1 });
    expect(JSON.stringify(long).length).toBeGreaterThan(2000);
    expect(outcome(bytesOf(submitted(long)), memo)).toEqual(outcome(bytesOf(submitted(long))));
    expect(memo.size).toBe(2);
  });

  it("agrees with the full decode on submissions with one DAG field replaced by arbitrary JSON (bounded property)", () => {
    const memo = new DagMemo(8);
    const base = chain(3);
    fc.assert(
      fc.property(
        fc.nat(2),
        fc.constantFrom("id", "kind", "dependsOn", "params", "extra"),
        fc.jsonValue(),
        (i, k, v) => {
          const dag = structuredClone(base) as { steps: Record<string, unknown>[] };
          dag.steps[i]![k] = v;
          const bytes = bytesOf(submitted(dag));
          expect(outcome(bytes, memo)).toEqual(outcome(bytes));
          // Twice: the second decode of a valid one comes from the memo.
          expect(outcome(bytes, memo)).toEqual(outcome(bytes));
        },
      ),
      { numRuns: 300 },
    );
  });
});
