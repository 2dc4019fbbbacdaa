import { describe, expect, it } from "vitest";
import { exampleEvent } from "../test/support/example-events.ts";
import { isCheckedDag, parseDag } from "./checked-dag.ts";
import { encodeEvent } from "./codec.ts";
import { isDroverError } from "./errors.ts";

// Pure: the boundary is which `run.submitted` encodeEvent validates without parsing its DAG again
// (only one whose DAG is the very object parseDag returned, frozen) and that everything else is
// still refused as before.
const refused = (f: () => unknown) => {
  try {
    f();
  } catch (e) {
    return isDroverError(e, "contract-violation");
  }
  return false;
};
const dagInput = {
  name: "two",
  steps: [
    { id: "a", kind: "compute", params: { durationMs: 5 } },
    { id: "b", kind: "compute", dependsOn: ["a"], params: { durationMs: 5 } },
  ],
};
const submittedWith = (dag: unknown) => {
  const e = exampleEvent("run.submitted");
  return { ...e, data: { ...e.data, dag } } as typeof e;
};

describe("DAGs checked once per submission (pure)", () => {
  it("parseDag marks and deeply freezes what it returns; an equal copy or a refused DAG is not checked", () => {
    const r = parseDag(dagInput);
    if (!r.success) throw r.error;
    expect(isCheckedDag(r.data)).toBe(true);
    expect(Object.isFrozen(r.data.steps[1]!.dependsOn)).toBe(true);
    expect(() => (r.data.steps as unknown[]).push({ id: "c" })).toThrow(TypeError);
    expect(isCheckedDag(structuredClone(r.data))).toBe(false);
    expect(parseDag({ steps: [] }).success).toBe(false);
    expect(isCheckedDag(dagInput)).toBe(false);
  });

  it("encodes a submission with a checked DAG to the same bytes as with an unchecked equal one", () => {
    const r = parseDag(dagInput);
    if (!r.success) throw r.error;
    expect(encodeEvent(submittedWith(r.data))).toEqual(encodeEvent(submittedWith(structuredClone(r.data))));
  });

  it("still refuses a submission whose other fields are invalid around a checked DAG", () => {
    const r = parseDag(dagInput);
    if (!r.success) throw r.error;
    const e = submittedWith(r.data);
    expect(refused(() => encodeEvent({ ...e, data: { ...e.data, sharedRunId: "not an id" } } as typeof e))).toBe(true);
    expect(refused(() => encodeEvent({ ...e, data: { ...e.data, extra: 1 } } as typeof e))).toBe(true);
    expect(refused(() => encodeEvent({ ...e, eventId: "" } as typeof e))).toBe(true);
  });

  it("still parses an unchecked DAG in full: a cyclic one is refused", () => {
    const cyclic = {
      steps: [
        { id: "a", kind: "compute", dependsOn: ["b"], params: { durationMs: 1 } },
        { id: "b", kind: "compute", dependsOn: ["a"], params: { durationMs: 1 } },
      ],
    };
    expect(refused(() => encodeEvent(submittedWith(cyclic)))).toBe(true);
  });
});
