import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import {
  createStepCacheStore,
  stepCachePrefixOf,
  stepCacheStreamOf,
  type StepCacheEntry,
} from "../../platform/step-cache-store.ts";
import { uniqueName } from "../support/isolation.ts";
import { attempt, authFixture, type AuthFixture } from "../support/nats-auth-fixture.ts";

const url = () => inject("natsUrl");
const entry = (run: string): StepCacheEntry =>
  ({
    sharedRunId: run,
    executionId: `exec-${"a".repeat(32)}`,
    stepId: "price",
    outputDigest: "c".repeat(64),
    storedAt: "2026-01-01T00:00:00.000Z",
  }) as StepCacheEntry;

describe("a runtime reads and writes only its tenants' step cache keys (boundary: real nats-server authorization, the step cache stream)", () => {
  let fx: AuthFixture;
  let stream: string;
  let prefix: string;
  const key = "b".repeat(64);

  beforeAll(async () => {
    fx = await authFixture(url(), 60_000);
    stream = stepCacheStreamOf(fx.f.layout);
    prefix = stepCachePrefixOf(fx.f.layout);
    // A globex entry under the same key, written by the harness.
    await createStepCacheStore(fx.f.nc, fx.f.layout).put("globex", key, entry("run-globex"));
  });
  afterAll(() => fx.close());

  const acmeRuntime = async () => {
    const rt = uniqueName("rt");
    await fx.register(rt, "acme");
    return fx.asRuntime(rt);
  };

  it("writes and reads back its own tenant's entry with its minted credentials; the last write wins and entries are kept 31 days", async () => {
    const cache = createStepCacheStore(await acmeRuntime(), fx.f.layout);
    expect(await cache.get("acme", key)).toBeUndefined();
    await cache.put("acme", key, entry("run-acme-1"));
    await cache.put("acme", key, entry("run-acme-2"));
    expect(await cache.get("acme", key)).toMatchObject({ sharedRunId: "run-acme-2" });
    // One entry per key subject (acme's and globex's), kept 31 days.
    const info = await fx.f.jsm.streams.info(stream);
    expect(info.state.messages).toBe(2);
    expect(info.config).toMatchObject({ max_msgs_per_subject: 1, max_age: 31 * 86_400_000 * 1_000_000 });
  });

  it("cannot read or write another tenant's entry, even under the same key, by any route", async () => {
    const nc = await acmeRuntime();
    await expect(createStepCacheStore(nc, fx.f.layout).get("globex", key)).rejects.toThrow(/permission/i);
    await expect(createStepCacheStore(nc, fx.f.layout).put("globex", key, entry("forged"))).rejects.toThrow(
      /permission/i,
    );
    expect(await createStepCacheStore(fx.f.nc, fx.f.layout).get("globex", key)).toMatchObject({
      sharedRunId: "run-globex",
    });
    const refused: [string, string][] = [
      [`${prefix}.globex.${key}`, "{}"],
      [`$JS.API.DIRECT.GET.${stream}.${prefix}.globex.${key}`, ""],
      [`$JS.API.DIRECT.GET.${stream}.${prefix}.>`, ""],
      [`$JS.API.DIRECT.GET.${stream}`, JSON.stringify({ last_by_subj: `${prefix}.globex.${key}` })],
      [`$JS.API.STREAM.MSG.GET.${stream}`, JSON.stringify({ seq: 1 })],
      [`$JS.API.CONSUMER.CREATE.${stream}.oc.${prefix}.globex.>`, JSON.stringify({ stream_name: stream, config: {} })],
      [`$JS.API.STREAM.PURGE.${stream}`, "{}"],
      [`$JS.API.STREAM.DELETE.${stream}`, "{}"],
    ];
    for (const [s, body] of refused) expect([s, await attempt(nc, s, body)]).toEqual([s, "refused"]);
  });

  it("the api lists and clears, and the operator rebuilds, tenants' keys by subject; the other services write none", async () => {
    const api = await fx.as("api");
    const apiCache = createStepCacheStore(api, fx.f.layout);
    expect(await apiCache.get("globex", key)).toMatchObject({ sharedRunId: "run-globex" });
    expect((await apiCache.list("globex", { limit: 10 })).entries.map((e) => e.key)).toContain(key);
    const operatorCache = createStepCacheStore(await fx.as("operator"), fx.f.layout);
    await operatorCache.put("globex", key, entry("run-globex-rebuilt"));
    expect(await apiCache.clear("globex", key, { at: "2026-01-02T00:00:00.000Z", by: "tenant:globex" })).toBe(true);
    expect(await operatorCache.clearedOf("globex", key)).toEqual({
      at: "2026-01-02T00:00:00.000Z",
      by: "tenant:globex",
    });
    // Their writes are refused (reads cannot be told apart on this server: its tagged scope grants a
    // service's event-stream reads on every stream, `$JS.API.DIRECT.GET.*.>`; the unit test checks
    // the production scope's exact stream names).
    for (const id of ["admission", "recovery", "scheduler", "forensics"] as const)
      expect([id, await attempt(await fx.as(id), `${prefix}.globex.${key}`, "{}")]).toEqual([id, "refused"]);
    // Neither may purge the cache stream (a consumer right cannot be told apart here either).
    for (const nc of [api, await fx.as("operator")])
      expect(await attempt(nc, `$JS.API.STREAM.PURGE.${stream}`, "{}")).toBe("refused");
  });
});
