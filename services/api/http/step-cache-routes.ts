import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { z } from "zod";
import { DroverError, StepCacheKey } from "../../../contracts/index.ts";
import type { StepCacheStore } from "../../../platform/step-cache-store.ts";
import { readTenant } from "../domain/access.ts";
import { principalOf } from "../shell/cancel-run.ts";
import type { ApiDeps } from "../shell/deps.ts";
import { credentialOf } from "./auth.ts";

const ListQuery = z
  .object({
    tenant: z.string().max(200).optional(),
    limit: z.coerce.number().int().min(1).max(1000).default(100),
    after: StepCacheKey.optional().describe("continue after this key (a previous answer's next)"),
  })
  .strict();
const KeyParams = z.object({ key: StepCacheKey });
const TenantQuery = z.object({ tenant: z.string().max(200).optional() }).strict();

const Listing = z.object({
  key: z.string(),
  sharedRunId: z.string().describe("the run whose journaled completion the key points at"),
  executionId: z.string(),
  stepId: z.string(),
  outputDigest: z.string(),
  storedAt: z.string().describe("when that step-completed was journaled (a hit's TTL counts from it)"),
  indexedAt: z.string().describe("when the index got the entry"),
});
const ListAnswer = z.object({ entries: z.array(Listing), next: z.string().nullable() });
const ClearAnswer = z.object({
  key: z.string(),
  outcome: z.enum(["cleared", "not-cached"]).describe("not-cached: the tenant had no entry under the key"),
});

/**
 * The step cache index (docs/step-cache.md "Inspect and clear"): a tenant lists and clears its own
 * keys; an operator names the tenant with `?tenant=`. Every read and write names the tenant's
 * subjects only, so another tenant's key is not listed and clearing it clears nothing of theirs.
 */
export const stepCacheRoutes: FastifyPluginAsyncZod<{ deps: ApiDeps }> = async (app, { deps }) => {
  const cache = (): StepCacheStore => {
    if (!deps.stepCache) throw new DroverError("event-store-unavailable", "this API has no step cache index");
    return deps.stepCache;
  };

  app.get("/step-cache", { schema: { querystring: ListQuery, response: { 200: ListAnswer } } }, async (request) => {
    const tenant = readTenant(credentialOf(request), request.query.tenant);
    const { limit, after } = request.query;
    const page = await cache().list(tenant, { limit, ...(after === undefined ? {} : { after }) });
    return {
      entries: page.entries.map(({ key, entry, indexedAt }) => ({ key, ...entry, indexedAt })),
      next: page.next ?? null,
    };
  });

  app.delete(
    "/step-cache/:key",
    { schema: { params: KeyParams, querystring: TenantQuery, response: { 200: ClearAnswer } } },
    async (request) => {
      const credential = credentialOf(request);
      const tenant = readTenant(credential, request.query.tenant);
      const key = request.params.key;
      const had = await cache().clear(tenant, key, {
        at: deps.clock.now().toISOString(),
        by: principalOf(credential),
      });
      return { key, outcome: had ? ("cleared" as const) : ("not-cached" as const) };
    },
  );
};
