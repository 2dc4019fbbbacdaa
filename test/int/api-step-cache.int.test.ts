import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { ExecutionId, SharedRunId, StepId, TenantId } from "../../contracts/index.ts";
import {
  createStepCacheStore,
  rebuildStepCache,
  stepCacheStreamConfig,
  stepCacheStreamOf,
  type StepCacheEntry,
  type StepCacheStore,
} from "../../platform/step-cache-store.ts";
import { execRef } from "../../streams/subjects.ts";
import { main } from "../../cli/drover.ts";
import { credentialOf } from "../../platform/nats-auth/credentials.ts";
import { serverKeysOf } from "../../platform/nats-auth/server-keys.ts";
import { apiFixture, auth, type ApiFixture } from "../support/api-app.ts";
import { event } from "../support/streams.ts";

const K1 = "1".repeat(64);
const K2 = "2".repeat(64);
const K3 = "3".repeat(64);
const entry = (run: string, step = "price"): StepCacheEntry => ({
  sharedRunId: SharedRunId.parse(run),
  executionId: ExecutionId.parse(`ex-${run}`),
  stepId: StepId.parse(step),
  outputDigest: "c".repeat(64),
  storedAt: "2026-01-01T00:00:00.000Z",
});

/**
 * The step cache index through the API (docs/step-cache.md "Inspect and clear") against a real
 * nats-server and the real cache stream: a tenant lists and clears its own keys only, even where
 * another tenant has an entry under the same key; a rebuild keeps a cleared key cleared.
 */
describe("step cache inspect and clear through the API, tenant-scoped (real nats-server, the step cache stream)", () => {
  let fx: ApiFixture;
  let cache: StepCacheStore;
  const messages = async () => (await fx.jsm.streams.info(stepCacheStreamOf(fx.layout))).state.messages;
  beforeAll(async () => {
    fx = await apiFixture(inject("natsUrl"));
    await fx.jsm.streams.add(stepCacheStreamConfig(fx.layout, 1));
    cache = createStepCacheStore(fx.nc, fx.layout);
    await cache.put("acme", K1, entry("run-acme-1"));
    await cache.put("acme", K2, entry("run-acme-2", "score"));
    await cache.put("globex", K1, entry("run-globex-1"));
    await cache.put("globex", K3, entry("run-globex-3"));
  });
  afterAll(async () => {
    await fx?.jsm.streams.delete(stepCacheStreamOf(fx.layout)).catch(() => undefined);
    await fx?.close();
  });
  const list = (who: "acme" | "globex" | "operator", q = "") =>
    fx.app.inject({ url: `/v1/step-cache${q}`, headers: auth(who) });
  const clear = (who: "acme" | "globex" | "operator", key: string, q = "") =>
    fx.app.inject({ method: "DELETE", url: `/v1/step-cache/${key}${q}`, headers: auth(who) });

  it("lists only the caller's tenant's keys, paged by key; an operator names the tenant, a tenant may not name another", async () => {
    const acme = await list("acme");
    expect(acme.statusCode).toBe(200);
    expect(acme.json()).toMatchObject({
      entries: [
        { key: K1, sharedRunId: "run-acme-1", stepId: "price", storedAt: "2026-01-01T00:00:00.000Z" },
        { key: K2, sharedRunId: "run-acme-2", stepId: "score" },
      ],
      next: null,
    });
    const page = (await list("acme", "?limit=1")).json();
    expect([page.entries.map((e: { key: string }) => e.key), page.next]).toEqual([[K1], K1]);
    expect((await list("acme", `?limit=1&after=${K1}`)).json().entries.map((e: { key: string }) => e.key)).toEqual([
      K2,
    ]);
    const globex = (await list("globex")).json().entries.map((e: { sharedRunId: string }) => e.sharedRunId);
    expect(globex).toEqual(["run-globex-1", "run-globex-3"]);
    expect((await list("operator", "?tenant=globex")).json().entries).toHaveLength(2);
    expect((await list("operator")).statusCode).toBe(400);
    expect((await list("acme", "?tenant=globex")).statusCode).toBe(403);
  });

  it("clears the caller's key only: another tenant's entry under the same key stays, a key the tenant never had writes nothing", async () => {
    const before = await messages();
    const other = await clear("acme", K3);
    expect([other.statusCode, other.json()]).toEqual([200, { key: K3, outcome: "not-cached" }]);
    expect(await messages()).toBe(before);
    expect(await cache.get("globex", K3)).toMatchObject({ sharedRunId: "run-globex-3" });
    expect((await clear("acme", K3, "?tenant=globex")).statusCode).toBe(403);

    const cleared = await clear("acme", K1);
    expect([cleared.statusCode, cleared.json()]).toEqual([200, { key: K1, outcome: "cleared" }]);
    // A lookup of the cleared key misses; globex's entry under the same key is untouched.
    expect(await cache.get("acme", K1)).toBeUndefined();
    expect(await cache.clearedOf("acme", K1)).toEqual({ at: "2026-05-06T07:08:09.000Z", by: "tenant:acme" });
    expect(await cache.get("globex", K1)).toMatchObject({ sharedRunId: "run-globex-1" });
    expect((await list("acme")).json().entries.map((e: { key: string }) => e.key)).toEqual([K2]);
    expect((await clear("acme", K1)).json().outcome).toBe("not-cached");
    expect((await clear("operator", K1, "?tenant=globex")).json().outcome).toBe("cleared");
    expect(await cache.clearedOf("globex", K1)).toMatchObject({ by: "operator:ops" });
    expect((await clear("acme", "not-a-key")).statusCode).toBe(400);
  });

  it("a rebuild from the journals rewrites the keys of completions and keeps a key cleared after its completion cleared", async () => {
    const acme = TenantId.parse("acme");
    const executionId = ExecutionId.parse("ex-rebuild-1");
    const started = event("exec.started", { tenantId: acme });
    const s = await fx.store.append(
      execRef(acme, executionId),
      { ...started, data: { ...started.data, sharedRunId: SharedRunId.parse("run-acme-9") } },
      { expectedSeq: 0 },
    );
    let seq = s.seq;
    for (const [stepId, cacheKey] of [
      ["price", K1],
      ["score", K2],
    ] as const) {
      const done = event("exec.step-completed", { tenantId: acme });
      seq = (
        await fx.store.append(
          execRef(acme, executionId),
          { ...done, data: { ...done.data, stepId: StepId.parse(stepId), cacheKey } },
          { expectedSeq: seq },
        )
      ).seq;
    }
    // K1 was cleared (2026-05-06) after its completion was journaled (the example's 2026-01-02): it stays cleared.
    // `drover admin step-cache-rebuild` with the operator's own NATS credentials.
    let out = "";
    const env = {
      NATS_URL: inject("natsUrl"),
      NATS_CREDS: credentialOf(serverKeysOf(inject("natsUrl"))!, "operator"),
      DROVER_STREAM_TAG: fx.layout.eventPrefix.slice(0, -".drover".length),
    };
    const io = { out: (t: string) => (out += t), err: (t: string) => (out += t), env };
    expect(await main(["admin", "step-cache-rebuild", "--tenant", "acme", "--json"], io), out).toBe(0);
    expect(JSON.parse(out)).toMatchObject({ tenantId: "acme", keysWritten: 1 });
    expect(await cache.get("acme", K1)).toBeUndefined();
    expect(await cache.get("acme", K2)).toMatchObject({ sharedRunId: "run-acme-9", executionId, stepId: "score" });
    expect(await cache.get("globex", K3)).toMatchObject({ sharedRunId: "run-globex-3" });
    // Run again with the library function: the same decision.
    expect(await rebuildStepCache(fx.store, fx.layout, cache, "acme")).toBe(1);
    expect(await cache.get("acme", K1)).toBeUndefined();
  });
});
