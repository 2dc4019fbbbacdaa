import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { allExampleEvents } from "../test/support/example-events.ts";
import { decodeEvent, parseEvent } from "./codec.ts";
import { DagDefinition } from "./dag.ts";
import { isDroverError } from "./errors.ts";
import { EVENT_TYPES } from "./events.ts";

const RUNS = { numRuns: 300 };

/** Calls `f`; passes when it returns or throws a contract-violation DroverError, fails on any other throw. */
function onlyContractViolations(f: () => unknown): boolean {
  try {
    f();
    return true;
  } catch (e) {
    if (isDroverError(e, "contract-violation")) return true;
    throw new Error(`threw something other than a contract-violation: ${String(e)}`, { cause: e });
  }
}

describe("parseEvent never fails with anything but a contract-violation (bounded property)", () => {
  it("on arbitrary JSON values", () => {
    fc.assert(
      fc.property(fc.jsonValue(), (v) => onlyContractViolations(() => parseEvent(v))),
      RUNS,
    );
  });

  it("on arbitrary objects carrying a real event type", () => {
    const arb = fc.record({
      type: fc.constantFrom(...EVENT_TYPES),
      rest: fc.dictionary(fc.string(), fc.jsonValue()),
      data: fc.jsonValue(),
    });
    fc.assert(
      fc.property(arb, ({ type, rest, data }) => onlyContractViolations(() => parseEvent({ ...rest, type, data }))),
      RUNS,
    );
  });

  it("on valid example events with one field replaced by arbitrary JSON", () => {
    const examples = allExampleEvents();
    const arb = fc.record({
      i: fc.nat(examples.length - 1),
      inData: fc.boolean(),
      key: fc.nat(),
      value: fc.jsonValue(),
    });
    fc.assert(
      fc.property(arb, ({ i, inData, key, value }) => {
        const event: Record<string, unknown> = structuredClone(examples[i]!);
        const target = (inData ? event.data : event) as Record<string, unknown>;
        const keys = Object.keys(target);
        const k = keys[key % Math.max(keys.length, 1)] ?? "extra";
        target[k] = value;
        return onlyContractViolations(() => parseEvent(event));
      }),
      RUNS,
    );
  });

  it("on arbitrary bytes given to decodeEvent, reporting the sequence", () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 256 }), fc.nat(), (bytes, seq) => {
        try {
          decodeEvent(bytes, { seq });
          return true;
        } catch (e) {
          return isDroverError(e, "contract-violation") && e.message.includes(`at stream sequence ${seq}`);
        }
      }),
      RUNS,
    );
  });
});

/** Independent reference: ids unique, every dependency known and not itself, and Kahn's algorithm orders every step. */
function referenceAccepts(steps: readonly { id: string; dependsOn: readonly string[] }[]): boolean {
  const ids = steps.map((s) => s.id);
  if (new Set(ids).size !== ids.length) return false;
  const known = new Set(ids);
  if (steps.some((s) => s.dependsOn.some((d) => !known.has(d) || d === s.id))) return false;
  const indegree = new Map(steps.map((s) => [s.id, new Set(s.dependsOn).size]));
  const dependents = new Map<string, string[]>();
  for (const s of steps) for (const d of new Set(s.dependsOn)) dependents.set(d, [...(dependents.get(d) ?? []), s.id]);
  const ready = ids.filter((id) => indegree.get(id) === 0);
  let ordered = 0;
  while (ready.length > 0) {
    const id = ready.pop() as string;
    ordered++;
    for (const next of dependents.get(id) ?? []) {
      const left = (indegree.get(next) ?? 0) - 1;
      indegree.set(next, left);
      if (left === 0) ready.push(next);
    }
  }
  return ordered === steps.length;
}

describe("DAG validation agrees with an independent reference on random graphs (bounded property)", () => {
  // A small id pool makes duplicates and cycles common; "ghost" ids are never step ids.
  const stepId = fc.integer({ min: 0, max: 11 }).map((n) => `s${n}`);
  const depId = fc.oneof(
    { weight: 12, arbitrary: stepId },
    { weight: 1, arbitrary: fc.constantFrom("ghost-1", "ghost-2") },
  );
  const graph = fc.array(fc.record({ id: stepId, dependsOn: fc.array(depId, { maxLength: 4 }) }), {
    minLength: 1,
    maxLength: 12,
  });
  // Biased towards acyclic graphs: each step depends only on steps listed before it, unless flipped.
  const mostlyAcyclic = fc.array(fc.array(fc.nat(), { maxLength: 3 }), { minLength: 1, maxLength: 30 }).chain((deps) =>
    fc
      .record({
        backEdge: fc.option(fc.record({ from: fc.nat(deps.length - 1), to: fc.nat(deps.length - 1) }), {
          nil: undefined,
        }),
      })
      .map(({ backEdge }) =>
        deps.map((ds, i) => ({
          id: `n${i}`,
          dependsOn: [
            ...(i === 0 ? [] : ds.map((d) => `n${d % i}`)),
            ...(backEdge && backEdge.from === i ? [`n${backEdge.to}`] : []),
          ],
        })),
      ),
  );

  const check = (steps: { id: string; dependsOn: string[] }[]) => {
    const accepted = DagDefinition.safeParse({ steps: steps.map((s) => ({ ...s, kind: "compute" })) }).success;
    expect(accepted, JSON.stringify(steps)).toBe(referenceAccepts(steps));
  };

  it("accepts a random graph iff its ids are unique, its dependencies known and it is acyclic", () => {
    fc.assert(fc.property(graph, check), { numRuns: 500 });
  });

  it("does the same on larger, mostly acyclic graphs with an occasional back edge", () => {
    fc.assert(fc.property(mostlyAcyclic, check), { numRuns: 500 });
  });

  it("the generators exercise both outcomes (the property is not vacuous)", () => {
    const outcomes = new Set(fc.sample(graph, { numRuns: 300, seed: 1 }).map(referenceAccepts));
    const outcomesLarge = new Set(fc.sample(mostlyAcyclic, { numRuns: 300, seed: 1 }).map(referenceAccepts));
    expect([...outcomes].sort()).toEqual([false, true]);
    expect([...outcomesLarge].sort()).toEqual([false, true]);
  });
});
