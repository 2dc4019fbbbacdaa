import { describe, expect, it } from "vitest";
import { FlowKeySettings } from "../../../contracts/index.ts";
import { gcra } from "../../../contracts/gcra.ts";
import { decideKey, emptyFlowKey, evolveFlowKey, resolveKey, runKeys, type RunKey } from "./flow-keys.ts";
import { fairOrder, type PendingRun } from "./fair-queue.ts";

const key = (over: Partial<FlowKeySettings> = {}): RunKey => ({
  setting: FlowKeySettings.parse({ name: "openai", key: "openai:{input.model}", concurrency: 2, ...over }),
  value: "openai:gpt-4o",
});
const run = (sharedRunId: string, priority = 0) => ({ sharedRunId, priority });

describe("flow key derivation (pure; proves no transport)", () => {
  it("resolves input paths and labels into the key value, and leaves a run without the field out of the key", () => {
    const model = { input: { model: "gpt-4o", n: 3 }, labels: { customer: "acme" } };
    expect(resolveKey("openai:{input.model}", model)).toBe("openai:gpt-4o");
    expect(resolveKey("{labels.customer}/{input.n}", model)).toBe("acme/3");
    expect(resolveKey("openai:{input.model}", { input: { other: 1 } })).toBeUndefined();
    expect(resolveKey("openai:{input.model}", { input: { model: { nested: true } } })).toBeUndefined();
    const settings = [
      FlowKeySettings.parse({ name: "z-customer", key: "c:{labels.customer}", concurrency: 1 }),
      FlowKeySettings.parse({ name: "a-model", key: "m:{input.model}", rate: { perSecond: 1 } }),
      FlowKeySettings.parse({ name: "m-absent", key: "x:{labels.none}", concurrency: 1 }),
    ];
    expect(runKeys(settings, model).map((k) => k.value)).toEqual(["m:gpt-4o", "c:acme"]);
  });

  it("a constant expression puts every run of the tenant under one key: a tenant-wide limit that holds across admission replicas", () => {
    const settings = [FlowKeySettings.parse({ name: "tenant", key: "all", concurrency: 5 })];
    for (const r of [{}, { input: { model: "x" } }, { labels: { customer: "acme" } }])
      expect(runKeys(settings, r).map((k) => k.value)).toEqual(["all"]);
  });

  it("refuses a key expression with an unknown placeholder and a key without any limit", () => {
    expect(() => FlowKeySettings.parse({ name: "k", key: "{steps.a.output}", concurrency: 1 })).toThrow();
    expect(() => FlowKeySettings.parse({ name: "k", key: "plain" })).toThrow(/concurrency, rate or both/);
  });
});

describe("GCRA throttle (pure; proves no transport)", () => {
  it("admits a burst, then one per emission interval, and names the time the next conforms", () => {
    let tat = 0;
    const at = 10_000;
    const out = [0, 0, 0, 50, 100, 150, 200].map((dt) => {
      const g = gcra(tat, at + dt, 10, 3);
      if (g.ok) tat = g.tatMs;
      return g.ok ? "ok" : `wait ${g.retryAtMs - at}`;
    });
    // burst 3 at t=0 (TAT 10 300), t=50: TAT - now = 250 > τ = 200 → wait until 100; 100 ok; 150 wait; 200 ok.
    expect(out).toEqual(["ok", "ok", "ok", "wait 100", "ok", "wait 200", "ok"]);
  });

  it("never lets n admissions in order come closer than (n - burst) × interval", () => {
    let tat = 0;
    const times: number[] = [];
    for (let now = 0; now < 5000; now += 7) {
      const g = gcra(tat, now, 10, 2);
      if (g.ok) {
        tat = g.tatMs;
        times.push(now);
      }
    }
    for (let i = 0; i < times.length; i++)
      for (let j = i; j < times.length; j++) expect(j - i + 1 - 2).toBeLessThanOrEqual((times[j]! - times[i]!) / 100);
    expect(times.length).toBeGreaterThanOrEqual(50);
  });
});

describe("flow key decisions (pure; proves no transport)", () => {
  const ended = (done: string[]) => (id: string) => done.includes(id);
  it("counts only holders that have not ended and names the key and its count when full", () => {
    let s = emptyFlowKey();
    s = evolveFlowKey(s, { sharedRunId: "r1" }, 1);
    s = evolveFlowKey(s, { sharedRunId: "r2" }, 2);
    expect(decideKey(key(), s, run("r3"), 0, ended([]))).toEqual({
      kind: "wait",
      reason: { code: "waiting-for-key", detail: "waiting-for-key openai:gpt-4o 2/2" },
    });
    expect(decideKey(key(), s, run("r3"), 0, ended(["r1"]))).toEqual({ kind: "acquire", inFlight: 1 });
    expect(decideKey(key(), s, run("r1"), 0, ended([]))).toEqual({ kind: "holds" });
    expect(evolveFlowKey(s, { sharedRunId: "r9" }, 2)).toBe(s); // idempotent by sequence
  });

  it("holds a run with the time its rate conforms, and keeps a lower priority behind a held higher one", () => {
    const k = key({ concurrency: undefined, rate: { perSecond: 10, burst: 1 } });
    const s = evolveFlowKey(emptyFlowKey(), { sharedRunId: "r1", tat: "2026-01-01T00:00:00.100Z" }, 1);
    const now = Date.parse("2026-01-01T00:00:00.000Z");
    expect(decideKey(k, s, run("r2"), now, ended([]))).toEqual({
      kind: "wait",
      reason: { code: "key-rate-limited", detail: "rate-limited until 2026-01-01T00:00:00.100Z (openai:gpt-4o)" },
    });
    expect(decideKey(k, s, run("r2"), now + 100, ended([]))).toEqual({
      kind: "acquire",
      inFlight: 1,
      tatMs: now + 200,
    });
    expect(decideKey(key(), emptyFlowKey(), run("low", 1), 0, ended([]), 5)).toMatchObject({
      kind: "wait",
      reason: { code: "waiting-for-key" },
    });
    expect(decideKey(key(), emptyFlowKey(), run("same", 5), 0, ended([]), 5)).toEqual({ kind: "acquire", inFlight: 0 });
  });
});

describe("priority in the fair order (pure; proves no transport)", () => {
  const p = (tenantId: string, n: number, priority?: number): PendingRun => ({
    tenantId,
    sharedRunId: `${tenantId}-${n}`,
    recovery: false,
    sinceSeq: n,
    ...(priority === undefined ? {} : { priority }),
  });
  it("puts a tenant's higher-priority runs first while the tenants still alternate by weight", () => {
    const order = fairOrder([p("a", 1), p("a", 2), p("a", 3, 9), p("b", 4), p("b", 5, 1)], () => 1);
    expect(order.map((r) => r.sharedRunId)).toEqual(["a-3", "b-5", "a-1", "b-4", "a-2"]);
  });
});
