import { describe, expect, it } from "vitest";
import { DagDefinition } from "./index.ts";

// Pure (proves no transport): what a DAG may say about the step cache, checked at submission.
const parse = (step: object) => DagDefinition.safeParse({ steps: [{ id: "s", ...step }] });
const messages = (r: ReturnType<typeof parse>) => (r.success ? [] : r.error.issues.map((i) => i.message));

describe("step cache in the DAG", () => {
  it("http, llm and custom steps take cache { ttlMs } (1 ms to 30 days)", () => {
    const custom = parse({ kind: "custom", handler: "h", cache: { ttlMs: 60_000 } });
    expect(custom.success && custom.data.steps[0]!.cache).toEqual({ ttlMs: 60_000 });
    expect(parse({ kind: "http", params: { url: "https://example.com" }, cache: { ttlMs: 1 } }).success).toBe(true);
    expect(parse({ kind: "llm", params: { model: "m", prompt: "p" }, cache: { ttlMs: 30 * 86_400_000 } }).success).toBe(
      true,
    );
    expect(parse({ kind: "custom", handler: "h", cache: { ttlMs: 30 * 86_400_000 + 1 } }).success).toBe(false);
    expect(parse({ kind: "custom", handler: "h", cache: { ttlMs: 0 } }).success).toBe(false);
    expect(parse({ kind: "custom", handler: "h", cache: { ttlMs: 10, key: "x" } }).success).toBe(false);
  });

  it("compute, flaky and sleep steps and map steps are refused with a message naming the step", () => {
    expect(messages(parse({ kind: "compute", cache: { ttlMs: 10 } }))).toEqual([
      'step "s": cache applies to http, llm, custom steps, not compute',
    ]);
    expect(messages(parse({ kind: "sleep", params: { durationMs: 1 }, cache: { ttlMs: 10 } }))).toHaveLength(1);
    const map = DagDefinition.safeParse({
      steps: [
        {
          id: "m",
          kind: "custom",
          handler: "h",
          map: { over: "input.items" },
          params: { x: { $ref: "item" } },
          cache: { ttlMs: 10 },
        },
      ],
    });
    expect(messages(map)).toEqual(['step "m": a map step takes no cache']);
  });
});
