import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { z } from "zod";
import { DroverError, staleHeartbeatMsOf } from "../../../contracts/index.ts";
import { requireOperator } from "../domain/access.ts";
import { publicRow } from "../domain/forensics-view.ts";
import { capacityEntry, runtimeRow } from "../domain/runtime-view.ts";
import type { ApiDeps } from "../shell/deps.ts";
import { deployedVersions } from "../../../platform/worker-deploys.ts";
import { credentialOf } from "./auth.ts";

const MeAnswer = z.object({
  role: z.enum(["tenant", "operator"]),
  tenantId: z.string().optional().describe("a tenant credential's tenant"),
  name: z.string().optional().describe("an operator credential's name, or a named tenant token's"),
  roles: z.array(z.string()).optional().describe("a tenant token's roles (wait resolvers name them)"),
  tenants: z.array(z.string()).optional().describe("for operators: the configured tenants"),
});
const QueueAnswer = z.object({
  total: z.number(),
  byTenant: z
    .record(z.string(), z.number())
    .describe("runs waiting for placement per tenant (tenants with none left out)"),
});
const IncidentsAnswer = z.object({
  asOf: z.number().describe("the stream sequence the read models include"),
  incidents: z.array(z.record(z.string(), z.unknown())).describe("incident documents, newest first"),
});
const IncidentsQuery = z.object({ limit: z.coerce.number().int().min(1).max(500).default(50) }).strict();

/**
 * `GET /me` (who the token is: the dashboard's first call), and for operators only (403 for
 * tenants): `GET /runtimes`, `GET /capacity`, `GET /queue` (runs waiting for placement per
 * tenant) and `GET /incidents` (the latest runtime failures).
 */
export const operatorRoutes: FastifyPluginAsyncZod<{ deps: ApiDeps }> = async (app, { deps }) => {
  app.get("/me", { schema: { response: { 200: MeAnswer } } }, async (request) => {
    const c = credentialOf(request);
    return c.role === "tenant"
      ? {
          role: c.role,
          tenantId: c.tenantId,
          ...(c.name ? { name: c.name } : {}),
          ...(c.roles ? { roles: c.roles } : {}),
        }
      : { role: c.role, name: c.name, tenants: deps.config.tenants.map((t) => t.tenantId) };
  });

  app.get("/runtimes", async (request) => {
    requireOperator(credentialOf(request));
    const all = await deps.capacity.descriptors();
    // Each tenant's last deploy (docs/worker-versions.md "Deploys as events") decides who drains.
    const deployed = deployedVersions(deps.store);
    const tenants = new Set(all.flatMap((d) => (d.registration?.worker ? [d.registration.tenantId ?? ""] : [])));
    tenants.delete("");
    const versions = new Map(await Promise.all([...tenants].map(async (t) => [t, await deployed(t)] as const)));
    return { runtimes: all.map((d) => runtimeRow(d, all, versions.get(d.registration?.tenantId ?? ""))) };
  });

  app.get("/capacity", async (request) => {
    requireOperator(credentialOf(request));
    const now = deps.clock.now();
    const ctx = { now, staleMs: staleHeartbeatMsOf(deps.config), reservedSlots: 0 };
    const entries = (await deps.capacity.descriptors()).map((d) => capacityEntry(d, ctx));
    const accepting = entries.filter((e) => e.canAcceptRun);
    return {
      at: now.toISOString(),
      reservationsIncluded: deps.capacity.includesReservations,
      accepting: accepting.length,
      availableSlots: accepting.reduce((n, e) => n + e.availableSlots, 0),
      runtimes: entries,
    };
  });

  app.get("/queue", { schema: { response: { 200: QueueAnswer } } }, async (request) => {
    requireOperator(credentialOf(request));
    if (!deps.openRuns)
      throw new DroverError("event-store-unavailable", "this API process does not project run events", {
        retryable: false,
      });
    const byTenant = await deps.openRuns.queueDepths();
    return { total: Object.values(byTenant).reduce((n, d) => n + d, 0), byTenant };
  });

  app.get(
    "/incidents",
    { schema: { querystring: IncidentsQuery, response: { 200: IncidentsAnswer } } },
    async (request) => {
      requireOperator(credentialOf(request));
      if (!deps.readModels)
        throw new DroverError("read-model-unavailable", "incidents are a read model and MONGO_URL is not set");
      const [asOf, docs] = await Promise.all([
        deps.readModels.position(),
        deps.readModels.recentIncidents(request.query.limit),
      ]);
      return { asOf, incidents: docs.map(publicRow) };
    },
  );
};
