import { describe, expect, it } from "vitest";
import { DagDefinition, parseDag } from "../../../contracts/index.ts";
import { exampleDagInput } from "../../../test/support/example-events.ts";
import { canonicalJson } from "../../../aggregates/step-inputs.ts";
import { dagDigest } from "./execution-open.ts";
import { sha256Hex } from "./step-runners.ts";

describe("dagDigest", () => {
  it("is the sha256 of the canonical JSON, for a DAG checked here (kept with it) or any other", () => {
    const want = sha256Hex(canonicalJson(DagDefinition.parse(exampleDagInput)));
    const checked = parseDag(JSON.parse(JSON.stringify(exampleDagInput))).data!;
    expect(dagDigest(checked)).toBe(want);
    expect(dagDigest(checked)).toBe(want);
    expect(dagDigest(DagDefinition.parse(exampleDagInput))).toBe(want);
  });

  it("is not kept for an unchecked DAG, which can still change", () => {
    const dag = DagDefinition.parse(exampleDagInput);
    const before = dagDigest(dag);
    (dag as { name?: string }).name = "renamed";
    expect(dagDigest(dag)).not.toBe(before);
  });
});
