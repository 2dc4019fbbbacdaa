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

  it('prints a map step\'s item counts (docs/control-flow.md "Map"), "not expanded" before it expanded, and no map table without a map', () => {
    const step = { kind: "compute", state: "running", attempts: 0, durationMs: null, dependsOn: [] };
    const out = runDetail({
      ...base,
      steps: [
        { ...step, id: "a", items: null },
        { ...step, id: "each", items: { total: 6, completed: 4, failed: 1, open: 1 } },
        { ...step, id: "later", items: { total: null, completed: 0, failed: 0, open: 0 } },
      ],
    });
    expect(out).toMatch(
      /MAP STEP\s+ITEMS\s+COMPLETED\s+FAILED\s+OPEN\neach\s+6\s+4\s+1\s+1\nlater\s+not expanded\s+0\s+0\s+0\n/,
    );
    expect(runDetail({ ...base, steps: [{ ...step, id: "a", items: null }] })).not.toContain("MAP STEP");
  });

  it("prints why a queued run waits and its priority (docs/flow-control.md), and neither line for a run that does not wait", () => {
    const held = runDetail({
      ...base,
      status: "queued",
      lastReason: "waiting-for-key",
      waitingFor: "waiting-for-key openai:gpt-4o 5/5",
      priority: 9,
    });
    expect(held).toContain("status    queued (waiting-for-key)\n");
    expect(held).toContain("waiting   waiting-for-key openai:gpt-4o 5/5\n");
    expect(held).toContain("priority  9\n");
    const plain = runDetail({ ...base, waitingFor: null, priority: 0 });
    expect(plain).not.toMatch(/^(waiting|priority) /m);
  });
});
