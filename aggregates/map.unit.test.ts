import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { DagDefinition, type DroverEvent, type EventType } from "../contracts/index.ts";
import { eventData } from "../test/support/event-data.ts";
import { envelope } from "../test/support/example-events.ts";
import { foldExecution } from "./execution.ts";
import { mapOutput, mapSource } from "./map.ts";
import { scheduleSteps, type StepProgress } from "./scheduler.ts";
import { canonicalJson } from "./step-inputs.ts";
import { validateExecution } from "./replay-validation.ts";

// Pure: the map's expansion, item scheduling, fan-in fold and replay re-derivation over in-memory
// journals. These prove no transport (the host test runtime-map.host.test.ts does).
const sha = (s: string) => createHash("sha256").update(s).digest("hex");
const dag = DagDefinition.parse({
  steps: [
    { id: "split", kind: "compute" },
    {
      id: "each",
      kind: "compute",
      dependsOn: ["split"],
      map: { over: "input.items", maxConcurrency: 3, toleratedFailures: 2 },
    },
    { id: "join", kind: "compute", dependsOn: ["each"] },
  ],
});
const items = Array.from({ length: 20 }, (_, i) => ({ n: i }));
const expansion = { count: 20, maxConcurrency: 3, toleratedFailures: 2 };

describe("map scheduling (pure; proves no transport)", () => {
  it("a ready map step is expanded first and never started itself", () => {
    const d = scheduleSteps(dag, { completed: new Set(["split"]), failures: new Map(), running: new Set() }, 0, 8);
    expect(d).toEqual({ kind: "continue", start: [], expand: ["each"] });
  });

  it("items start in index order, never more than maxConcurrency at once; two spent failures are tolerated and the map settles with them", () => {
    const completed = new Set(["split"]);
    const failures = new Map<string, { attempt: number; retryAt?: number }>();
    const running = new Set<string>();
    let most = 0;
    const order: string[] = [];
    for (let round = 0; round < 100; round++) {
      const p: StepProgress = { completed, failures, running, maps: new Map([["each", expansion]]) };
      const d = scheduleSteps(dag, p, 0, 8);
      if (d.kind !== "continue") throw new Error(d.kind);
      if (d.settle) {
        expect(d.settle).toEqual([{ stepId: "each", outcome: "completed", failed: [4, 11] }]);
        expect(order).toEqual(items.map((_, i) => `each--${i}`));
        expect(most).toBe(3);
        return;
      }
      for (const s of d.start) {
        running.add(s.stepId);
        order.push(s.stepId);
      }
      most = Math.max(most, running.size);
      // The oldest running item finishes: items 4 and 11 fail with no attempt left.
      const next = [...running][0]!;
      running.delete(next);
      if (next === "each--4" || next === "each--11") failures.set(next, { attempt: 1 });
      else completed.add(next);
    }
    throw new Error("the map never settled");
  });

  it("one spent failure more than tolerated settles the map failed at once, naming the failed items", () => {
    const failures = new Map([0, 1, 2].map((i) => [`each--${i}`, { attempt: 1 }] as const));
    const p: StepProgress = {
      completed: new Set(["split"]),
      failures,
      running: new Set(["each--3"]),
      maps: new Map([["each", expansion]]),
    };
    const d = scheduleSteps(dag, p, 0, 8);
    expect(d).toMatchObject({
      kind: "continue",
      start: [],
      settle: [{ stepId: "each", outcome: "failed", failed: [0, 1, 2] }],
    });
  });

  it("after a crash only unfinished items are offered (nothing running, completed ones never again)", () => {
    const completed = new Set(["split", "each--0", "each--1", "each--3"]);
    const p: StepProgress = {
      completed,
      failures: new Map(),
      running: new Set(),
      maps: new Map([["each", expansion]]),
    };
    const d = scheduleSteps(dag, p, 0, 8);
    expect(d.kind === "continue" && d.start.map((s) => s.stepId)).toEqual(["each--2", "each--4", "each--5"]);
  });

  it("the source must be an array within the bound (map-too-large, map-source-invalid)", () => {
    expect(mapSource(items, "input.items", 19)).toMatchObject({ ok: false, code: "map-too-large" });
    expect(mapSource({ a: 1 }, "input.items", 10)).toMatchObject({ ok: false, code: "map-source-invalid" });
    expect(mapSource(items, "input.items", 20)).toEqual({ ok: true, items });
  });
});

const ev = (type: EventType, data: object): DroverEvent =>
  ({
    ...envelope(type),
    tenantId: "t1",
    writer: { service: "runtime", instanceId: "rt", runtimeInstanceId: "rt", epoch: 0 },
    data: eventData(type as never, data as never),
  }) as unknown as DroverEvent;
const out = (o: unknown) => ({ output: o, outputDigest: sha(canonicalJson(o)) });
const done = (stepId: string, o: unknown = { ok: stepId }) =>
  ev("exec.step-completed", { stepId, attempt: 1, ...out(o), durationMs: 1 });
const small = DagDefinition.parse({
  steps: [
    {
      id: "each",
      kind: "custom",
      handler: "h",
      map: { over: "input.items", maxConcurrency: 2, toleratedFailures: 1 },
      params: { $ref: "item" },
    },
    { id: "join", kind: "custom", handler: "h", dependsOn: ["each"] },
  ],
});
const input = { items: ["a", "b", "c"] };
const expanded = (count = 3, digest = sha(canonicalJson(input.items))) =>
  ev("exec.map-expanded", { stepId: "each", count, itemsDigest: digest, maxConcurrency: 2, toleratedFailures: 1 });
const fanIn = mapOutput(3, (i) => ({ ok: `each--${i}` }), [{ index: 1, error: "boom" }]);
const journal = (expand: DroverEvent) => [
  ev("exec.started", {
    sharedRunId: "r1",
    localRunId: "l1",
    runtimeInstanceId: "rt",
    dagDigest: sha(canonicalJson(small)),
    stepCount: 2,
    epoch: 0,
  }),
  expand,
  done("each--0"),
  ev("exec.step-failed", { stepId: "each--1", attempt: 1, error: "boom", code: "step-non-retryable" }),
  done("each--2"),
  done("each", fanIn),
  done("join"),
  ev("exec.completed", { outputDigest: "f".repeat(64) }),
];
const replay = (events: DroverEvent[], value: unknown = input) =>
  validateExecution({
    executionId: "e1",
    journal: events.map((event, i) => ({ seq: i + 1, event })),
    dag: small,
    digest: sha,
    input: { value },
  });

describe("map fan-in and replay (pure; proves no transport)", () => {
  it("the fan-in output is the item outputs in index order (null for a failed one) plus the failed items", () => {
    expect(fanIn).toEqual({
      items: [{ ok: "each--0" }, null, { ok: "each--2" }],
      failed: [{ index: 1, error: "boom" }],
    });
    const state = foldExecution(journal(expanded()).map((event, i) => ({ seq: i + 1, event })));
    expect(state.maps.get("each")).toMatchObject({ count: 3, maxConcurrency: 2, toleratedFailures: 1, seq: 2 });
    expect(state.violations).toEqual([]);
  });

  it("a sound map journal replays as a match; the expansion is re-derived from the run input", () => {
    expect(replay(journal(expanded()))).toMatchObject({ kind: "match" });
  });

  it("an expansion whose count or digest the input does not re-derive is map-rederivation at its seq", () => {
    expect(replay(journal(expanded()), { items: ["a", "b", "x"] })).toMatchObject({
      kind: "divergence",
      divergence: { invariant: "map-rederivation", seq: 2 },
    });
    expect(replay(journal(expanded(3, "0".repeat(64))))).toMatchObject({
      divergence: { invariant: "map-rederivation", seq: 2 },
    });
  });

  it("an item the journal never expanded, or a fan-in output that is not its items', diverges", () => {
    const j = journal(expanded());
    expect(replay([j[0]!, j[2]!])).toMatchObject({ divergence: { invariant: "scheduler-divergence", seq: 2 } });
    const bad = [...j];
    bad[5] = done(
      "each",
      mapOutput(3, () => ({ ok: "other" }), [{ index: 1, error: "boom" }]),
    );
    expect(replay(bad)).toMatchObject({ divergence: { invariant: "output-rederivation", seq: 6 } });
  });
});
