import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { z } from "zod";
import { DroverError, ScheduleId, type Credential, type TenantId } from "../../../contracts/index.ts";
import { readTenant } from "../domain/access.ts";
import { BackfillBody, CreateScheduleBody } from "../domain/schedule-view.ts";
import { principalOf } from "../shell/cancel-run.ts";
import type { ApiDeps } from "../shell/deps.ts";
import { backfillSchedule, changeSchedule, createSchedule, getSchedule, listSchedules } from "../shell/schedules.ts";
import { credentialOf } from "./auth.ts";

const Params = z.object({ id: ScheduleId });
const TenantQuery = z.object({ tenant: z.string().max(200).optional() }).strict();
const View = z.record(z.string(), z.unknown()).describe("a schedule (docs/schedules.md)");

/**
 * The schedule routes (docs/schedules.md). Creating and changing a schedule needs a tenant
 * credential (the schedule's tenant is the token's, the recorded principal is the token's);
 * reads are confined to one tenant (an operator names it with `?tenant=`).
 */
export const schedulesRoutes: FastifyPluginAsyncZod<{ deps: ApiDeps }> = async (app, { deps }) => {
  const tenantOf = (c: Credential): TenantId => {
    if (c.role !== "tenant") throw new DroverError("forbidden", "schedules are changed with a tenant credential");
    return c.tenantId;
  };

  app.post("/schedules", { schema: { body: CreateScheduleBody, response: { 201: View } } }, async (request, reply) => {
    const c = credentialOf(request);
    const view = await createSchedule(deps, tenantOf(c), request.body, principalOf(c), request.id);
    return reply.code(201).header("location", `/v1/schedules/${view.scheduleId}`).send(view);
  });

  app.get(
    "/schedules",
    { schema: { querystring: TenantQuery, response: { 200: z.object({ schedules: z.array(View) }) } } },
    async (request) => ({
      schedules: await listSchedules(deps, readTenant(credentialOf(request), request.query.tenant)),
    }),
  );

  app.get(
    "/schedules/:id",
    { schema: { params: Params, querystring: TenantQuery, response: { 200: View } } },
    async (request) => getSchedule(deps, readTenant(credentialOf(request), request.query.tenant), request.params.id),
  );

  for (const [path, change] of [
    ["pause", "paused"],
    ["resume", "resumed"],
  ] as const)
    app.post(`/schedules/:id/${path}`, { schema: { params: Params, response: { 200: View } } }, async (request) => {
      const c = credentialOf(request);
      return changeSchedule(deps, tenantOf(c), request.params.id, change, principalOf(c), request.id);
    });

  app.delete("/schedules/:id", { schema: { params: Params, response: { 200: View } } }, async (request) => {
    const c = credentialOf(request);
    return changeSchedule(deps, tenantOf(c), request.params.id, "deleted", principalOf(c), request.id);
  });

  app.post(
    "/schedules/:id/backfill",
    {
      schema: {
        params: Params,
        body: BackfillBody,
        response: { 202: z.object({ backfillId: z.string(), fires: z.number(), schedule: View }) },
      },
    },
    async (request, reply) => {
      const c = credentialOf(request);
      const r = await backfillSchedule(deps, tenantOf(c), request.params.id, request.body, principalOf(c), request.id);
      return reply.code(202).send(r);
    },
  );
};
