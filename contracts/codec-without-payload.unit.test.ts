import { describe, expect, it } from "vitest";
import { exampleEvent, ids } from "../test/support/example-events.ts";
import { decodeEvent, decodeEventWithoutPayload, encodeEvent } from "./codec.ts";
import { isDroverError } from "./errors.ts";
import { EVENT_TYPES } from "./events.ts";

// Pure: bytes in, events out; proves no transport. The boundary: what a fold that keeps no DAG or
// input (recovery) may leave unchecked, and that it is only that.
const bytes = (v: unknown) => new TextEncoder().encode(JSON.stringify(v));
const subjectOf = (type: string) => {
  const [agg, name] = type.split(".");
  return agg === "runtime" ? `drover.runtime.${ids.runtime}.${name}` : `drover.${agg}.${ids.tenant}.x-1.${name}`;
};
const refused = (f: () => unknown) => {
  try {
    f();
  } catch (e) {
    return isDroverError(e, "contract-violation");
  }
  return false;
};
const submitted = exampleEvent("run.submitted");
const at = { seq: 9, subject: subjectOf("run.submitted") };

describe("decodeEventWithoutPayload (pure)", () => {
  it.each(EVENT_TYPES.filter((t) => t !== "run.submitted"))("decodes %s exactly as decodeEvent", (type) => {
    const encoded = encodeEvent(exampleEvent(type));
    expect(decodeEventWithoutPayload(encoded, { seq: 1, subject: subjectOf(type) })).toEqual(
      decodeEvent(encoded, { seq: 1, subject: subjectOf(type) }),
    );
  });

  it("decodes a valid run.submitted to what decodeEvent gives", () => {
    const encoded = encodeEvent(submitted);
    expect(decodeEventWithoutPayload(encoded, at)).toEqual(decodeEvent(encoded, at));
  });

  it("leaves a submission's DAG and input unchecked: a cyclic DAG decodeEvent refuses is decoded", () => {
    const cyclic = {
      steps: [
        { id: "a", kind: "compute", dependsOn: ["b"] },
        { id: "b", kind: "compute", dependsOn: ["a"] },
      ],
    };
    const raw = bytes({ ...submitted, data: { ...submitted.data, dag: cyclic, input: { big: "x" } } });
    expect(refused(() => decodeEvent(raw, at))).toBe(true);
    expect(decodeEventWithoutPayload(raw, at)).toMatchObject({ type: "run.submitted", data: { dag: cyclic } });
  });

  it("still refuses a submission whose envelope, other fields or subject are wrong, or whose DAG is not an object", () => {
    const { dag: _dag, ...noDag } = submitted.data;
    for (const bad of [
      { ...submitted, tenantId: "Not An Id" },
      { ...submitted, eventId: "" },
      { ...submitted, extra: 1 },
      { ...submitted, data: { ...submitted.data, source: "somewhere" } },
      { ...submitted, data: { ...submitted.data, unknownField: 1 } },
      { ...submitted, data: { ...submitted.data, dag: "steps" } },
      { ...submitted, data: noDag },
    ])
      expect(
        refused(() => decodeEventWithoutPayload(bytes(bad), at)),
        JSON.stringify(bad).slice(0, 120),
      ).toBe(true);
    expect(refused(() => decodeEventWithoutPayload(new TextEncoder().encode("{no"), at))).toBe(true);
    const admitted = encodeEvent(exampleEvent("run.admitted"));
    // A subject naming `submitted` over another event's bytes, and the other way round.
    expect(refused(() => decodeEventWithoutPayload(admitted, at))).toBe(true);
    expect(
      refused(() => decodeEventWithoutPayload(encodeEvent(submitted), { subject: subjectOf("run.admitted") })),
    ).toBe(true);
  });
});
