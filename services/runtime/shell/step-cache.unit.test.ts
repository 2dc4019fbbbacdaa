import { describe, expect, it } from "vitest";
import { DagDefinition, type DroverEvent, type EventType } from "../../../contracts/index.ts";
import { eventData } from "../../../test/support/event-data.ts";
import { envelope } from "../../../test/support/example-events.ts";
import type { StepCacheEntry } from "../../../platform/step-cache-store.ts";
import { indexCompletion, journalCacheHit, type CacheHost } from "./step-cache.ts";

// Unit tier with an in-memory index and journal: proves which journaled facts a lookup accepts as
// a hit and what it writes, NOT any transport (test/host/runtime-step-cache.host.test.ts does).
const KEY = "b".repeat(64);
const step = DagDefinition.parse({
  steps: [{ id: "p", kind: "custom", handler: "price", cache: { ttlMs: 60_000 } }],
}).steps[0]!;
const ev = (type: EventType, data: object, occurredAt = "2026-01-01T00:00:00.000Z"): DroverEvent =>
  ({
    ...envelope(type),
    occurredAt,
    tenantId: "t1",
    writer: { service: "runtime", instanceId: "rt", runtimeInstanceId: "rt", epoch: 0 },
    data: eventData(type as never, data as never),
  }) as unknown as DroverEvent;
const started = ev("exec.started", {
  sharedRunId: "r0",
  localRunId: "l0",
  runtimeInstanceId: "rt",
  dagDigest: "d".repeat(64),
  stepCount: 1,
  epoch: 0,
});
const output = { cents: 300 };
const DIGEST = "c".repeat(64);
const completed = (extra: object = {}) =>
  ev("exec.step-completed", {
    stepId: "price",
    attempt: 1,
    output,
    outputDigest: DIGEST,
    durationMs: 1,
    cacheKey: KEY,
    ...extra,
  });
const entry: StepCacheEntry = {
  sharedRunId: "r0",
  executionId: "exec-src",
  stepId: "price",
  outputDigest: DIGEST,
  storedAt: "2026-01-01T00:00:00.000Z",
} as StepCacheEntry;

function hostWith(journal: DroverEvent[], opts: { entry?: StepCacheEntry; nowIso?: string; putFails?: boolean } = {}) {
  const appended: DroverEvent[] = [];
  const logs: Record<string, unknown>[] = [];
  const puts: [string, string, StepCacheEntry][] = [];
  const reads: [string, string][] = [];
  const host: CacheHost = {
    cache: {
      index: {
        get: async () => ("entry" in opts ? opts.entry : entry),
        put: async (t, k, e) => {
          if (opts.putFails) throw new Error("stream unavailable");
          puts.push([t, k, e]);
        },
      },
      journal: async (tenantId, executionId) => {
        reads.push([tenantId, executionId]);
        return journal.map((event, i) => ({ seq: i + 1, event }));
      },
    },
    opened: {
      tenantId: "t1",
      sharedRunId: "r1",
      executionId: "exec-here",
      exec: { append: async (e: DroverEvent) => appended.push(e) },
      emit: (type: EventType, data: object) => ev(type, data, "2026-01-01T00:00:30.000Z"),
    } as never,
    clock: { now: () => new Date(opts.nowIso ?? "2026-01-01T00:00:30.000Z") },
    log: (f) => logs.push(f),
  };
  return { host, appended, logs, puts, reads };
}
const signal = new AbortController().signal;

describe("step cache lookups (in-memory index and journal; proves no transport)", () => {
  it("a hit is an executed step-completed carrying the key and digest within ttlMs, read from the asking tenant's journal; it journals step-reused with its origin", async () => {
    const h = hostWith([started, completed()]);
    expect(await journalCacheHit(step, KEY, h.host, signal)).toEqual({ value: output, outputDigest: DIGEST });
    expect(h.reads).toEqual([["t1", "exec-src"]]);
    expect(h.appended.map((e) => [e.type, e.data])).toEqual([
      [
        "exec.step-reused",
        {
          stepId: "p",
          fromRun: "r0",
          fromExecutionId: "exec-src",
          output,
          outputDigest: DIGEST,
          cache: { key: KEY, fromStepId: "price", storedAt: "2026-01-01T00:00:00.000Z" },
        },
      ],
    ]);
  });

  it("misses, writing nothing, when the named step only failed, its completion carries no or another key, the digest or run differ, or it is older than ttlMs", async () => {
    const failedOnly = ev("exec.step-failed", { stepId: "price", attempt: 1, error: "boom" });
    const cases: [string, DroverEvent[], Parameters<typeof hostWith>[1]][] = [
      ["failed step", [started, failedOnly], {}],
      ["no key", [started, completed({ cacheKey: undefined })], {}],
      ["other key", [started, completed({ cacheKey: "e".repeat(64) })], {}],
      ["other digest", [started, completed({ outputDigest: "f".repeat(64) })], {}],
      ["other run", [started, completed()], { entry: { ...entry, sharedRunId: "r9" } as StepCacheEntry }],
      ["no entry", [started, completed()], { entry: undefined }],
      ["stale", [started, completed()], { nowIso: "2026-01-01T00:01:00.001Z" }],
    ];
    for (const [name, journal, opts] of cases) {
      const h = hostWith(journal, opts);
      expect([name, await journalCacheHit(step, KEY, h.host, signal)]).toEqual([name, undefined]);
      expect([name, h.appended]).toEqual([name, []]);
    }
  });

  it("after an abort (cancel, lost ownership) a hit writes nothing", async () => {
    const h = hostWith([started, completed()]);
    const aborted = new AbortController();
    aborted.abort();
    expect(await journalCacheHit(step, KEY, h.host, aborted.signal)).toBeUndefined();
    expect(h.appended).toEqual([]);
  });

  it("indexes a journaled completion under the tenant and key; a failed index write is logged, not thrown", async () => {
    const done = completed({ stepId: "p" });
    const ok = hostWith([]);
    await indexCompletion(KEY, done, ok.host);
    expect(ok.puts).toEqual([
      [
        "t1",
        KEY,
        { sharedRunId: "r1", executionId: "exec-here", stepId: "p", outputDigest: DIGEST, storedAt: done.occurredAt },
      ],
    ]);
    const failing = hostWith([], { putFails: true });
    await expect(indexCompletion(KEY, done, failing.host)).resolves.toBeUndefined();
    expect(failing.logs).toMatchObject([{ event: "step-cache-unavailable", stepId: "p" }]);
  });
});
