import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { DagDefinition, parseEvent } from "../contracts/index.ts";
import { evolveExecution, foldExecution, initialExecutionState, type SequencedEvent } from "./execution.ts";

// Unit: replays a journal RECORDED from real runtime processes (test/fixtures, written once, never
// edited): runtime A crashed (SIGKILL) while step tail-2 waited for its retry; runtime B resumed it.
const dir = resolve(import.meta.dirname, "../test/fixtures");
const dag = DagDefinition.parse(JSON.parse(readFileSync(`${dir}/exec-journal-sigkill-resumed.dag.json`, "utf8")));
const recorded: SequencedEvent[] = readFileSync(`${dir}/exec-journal-sigkill-resumed.jsonl`, "utf8")
  .trim()
  .split("\n")
  .map((line) => JSON.parse(line) as { seq: number; event: unknown })
  .map((r) => ({ seq: r.seq, event: parseEvent(r.event, { seq: r.seq }) }));

describe("fold of a recorded crash-and-resume journal", () => {
  it("folds to a completed execution with every step's output, owned by the replacement at epoch 1, with no invariant break", () => {
    const s = foldExecution(recorded);
    expect(s.terminal).toBe("completed");
    expect([...s.completed.keys()].sort()).toEqual(dag.steps.map((x) => x.id).sort());
    expect(s.violations).toEqual([]);
    expect(s.epoch).toBe(1);
    expect(s.lastResumed).toMatchObject({ runtimeInstanceId: "rt-fixture-b", epoch: 1, completedSteps: 5 });
    expect(s.failures.size).toBe(0);
    expect(s.lastSeq).toBe(recorded.at(-1)?.seq);
  });

  it("replay validation: each step completes only after its dependencies, attempts continue from the journal across the crash, and every write after the fence carries the new epoch", () => {
    let state = initialExecutionState();
    const deps = new Map(dag.steps.map((x) => [x.id as string, x.dependsOn as readonly string[]]));
    for (const e of recorded) {
      if (e.event.type === "exec.step-completed" || e.event.type === "exec.step-failed") {
        const { stepId, attempt } = e.event.data;
        expect(
          deps.get(stepId)?.every((d) => state.completed.has(d)),
          `${stepId} at seq ${e.seq}`,
        ).toBe(true);
        expect(attempt, `${stepId} attempt at seq ${e.seq}`).toBe((state.failures.get(stepId)?.attempt ?? 0) + 1);
      }
      if (state.pendingRecovery || state.lastResumed)
        expect(e.event.writer.epoch ?? 1, `writer epoch at seq ${e.seq}`).toBe(1);
      state = evolveExecution(state, e);
    }
    const tail2 = recorded
      .filter((e) => e.event.type.startsWith("exec.step-") && (e.event.data as { stepId: string }).stepId === "tail-2")
      .map((e) => [e.event.type, (e.event.data as { attempt: number }).attempt, e.event.writer.runtimeInstanceId]);
    expect(tail2).toEqual([
      ["exec.step-failed", 1, "rt-fixture-a"],
      ["exec.step-failed", 2, "rt-fixture-b"],
      ["exec.step-completed", 3, "rt-fixture-b"],
    ]);
  });
});
