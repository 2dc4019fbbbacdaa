import { describe, expect, it } from "vitest";
import { DagDefinition } from "../contracts/index.ts";
import { cacheKeySeed, cacheKindOf, isFresh, resolvedInputText, workerVersionOf } from "./step-cache.ts";

// Pure (proves no transport): what a step cache key is made of.
const step = (params: object, extra: object = {}) =>
  DagDefinition.parse({
    steps: [
      { id: "up", kind: "compute" },
      { id: "s", kind: "custom", handler: "price", dependsOn: ["up"], params, cache: { ttlMs: 10 }, ...extra },
    ],
  }).steps[1]!;
const scope = (input: unknown, up: unknown = { v: 1 }) => ({ input, outputs: new Map([["up", up]]) });

describe("step cache keys", () => {
  it("the resolved input is the params with references replaced, canonical (key order does not matter), independent of the rest of the run input", () => {
    const s = step({ sku: { $ref: "input.sku" }, v: { $ref: "steps.up.output.v" } });
    expect(resolvedInputText(s, scope({ sku: "a", other: 1 }))).toBe('{"sku":"a","v":1}');
    expect(resolvedInputText(s, scope({ other: 2, sku: "a" }))).toBe(resolvedInputText(s, scope({ sku: "a" })));
    expect(resolvedInputText(s, scope({ sku: "b" }))).not.toBe(resolvedInputText(s, scope({ sku: "a" })));
    expect(() => resolvedInputText(s, scope({}))).toThrow(/resolves to nothing/);
  });

  it("a secret enters the resolved input by its name, never its value", () => {
    const s = step({ key: { $secret: "api-key" } });
    expect(resolvedInputText(s, scope({}))).toBe('{"key":"\\u0000secret:api-key"}');
  });

  it("every part of the key changes its seed: tenant, worker version, kind, input digest", () => {
    const base = { tenantId: "acme", workerVersion: "v1", kind: "custom:price", inputDigest: "d1" };
    const seeds = new Set([
      cacheKeySeed(base),
      cacheKeySeed({ ...base, tenantId: "globex" }),
      cacheKeySeed({ ...base, workerVersion: "v2" }),
      cacheKeySeed({ ...base, kind: "custom:price-alt" }),
      cacheKeySeed({ ...base, inputDigest: "d2" }),
    ]);
    expect(seeds.size).toBe(5);
    // Fields cannot run into each other: "ac"+"me…" is not "acme"+"…".
    expect(cacheKeySeed({ ...base, tenantId: "ac", workerVersion: "mev1" })).not.toBe(cacheKeySeed(base));
  });

  it("a custom step is keyed by the tenant worker's version and its handler; a built-in kind by `builtin`", () => {
    const s = step({});
    expect(cacheKindOf(s)).toBe("custom:price");
    expect(workerVersionOf(s, "abc")).toBe("abc");
    expect(workerVersionOf(s, undefined)).toBeUndefined();
    const http = DagDefinition.parse({ steps: [{ id: "h", kind: "http", params: { url: "https://x.example" } }] })
      .steps[0]!;
    expect(workerVersionOf(http, "abc")).toBe("builtin");
    expect(cacheKindOf(http)).toBe("http");
  });

  it("an output is fresh up to ttlMs after it was journaled, and not after", () => {
    expect(isFresh(1_000, 2_000, 1_000)).toBe(true);
    expect(isFresh(1_000, 2_001, 1_000)).toBe(false);
    expect(isFresh(Number.NaN, 2_000, 1_000)).toBe(false);
  });
});
