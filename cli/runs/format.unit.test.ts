import { describe, expect, it } from "vitest";
import { runDetail } from "./format.ts";

// Unit: the table rendering of `drover runs get` (no API, no transport).
const base = { sharedRunId: "run-p", status: "completed", tenantId: "acme", labels: {}, steps: [] };

describe("drover runs get (table)", () => {
  it('prints a run\'s parent and each child run (docs/control-flow.md "Child runs"), and neither line for a plain run', () => {
    const parent = runDetail({
      ...base,
      parent: null,
      children: [{ sharedRunId: "run-c", stepId: "sub", attempt: 1 }],
    });
    expect(parent).toContain("child     run-c (step sub)\n");
    expect(parent).not.toContain("parent ");
    const child = runDetail({
      ...base,
      sharedRunId: "run-c",
      parent: { sharedRunId: "run-p", executionId: "ex-1", stepId: "sub", onParentCancel: "cancel" },
      children: [],
    });
    expect(child).toContain("parent    run-p (step sub)\n");
    expect(child).not.toContain("child ");
    const plain = runDetail({ ...base, parent: null, children: [] });
    expect(plain).not.toMatch(/^(parent|child) /m);
  });
});
