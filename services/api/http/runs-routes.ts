import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { z } from "zod";
import { DroverError, SharedRunId } from "../../../contracts/index.ts";
import { readTenant } from "../domain/access.ts";
import { runView } from "../domain/run-view.ts";
import { SubmitRunBody } from "../domain/submission.ts";
import type { ApiDeps } from "../shell/deps.ts";
import { readRun, readRunEvents } from "../shell/run-queries.ts";
import { createSubmitter } from "../shell/submit-run.ts";
import { credentialOf } from "./auth.ts";

const RunParams = z.object({ id: SharedRunId });
const TenantQuery = z.object({ tenant: z.string().max(200).optional() }).strict();

/**
 * `POST /runs`, `GET /runs/:id`, `GET /runs/:id/events`. Submissions need a tenant credential
 * (the run's tenant is the token's); reads are confined to one tenant's subjects (an operator
 * names the tenant with `?tenant=`).
 */
export const runsRoutes: FastifyPluginAsyncZod<{ deps: ApiDeps }> = async (app, { deps }) => {
  const submit = createSubmitter(deps);

  app.post("/runs", { schema: { body: SubmitRunBody } }, async (request, reply) => {
    const credential = credentialOf(request);
    if (credential.role !== "tenant")
      throw new DroverError(
        "forbidden",
        "runs are submitted with a tenant credential; the run's tenant is the token's",
      );
    const { run, created } = await submit(credential.tenantId, request.body, request.id);
    const view = runView(run);
    if (view === undefined) throw new Error("a submitted run folded to no view");
    return reply
      .code(created ? 201 : 200)
      .header("location", `/v1/runs/${view.sharedRunId}`)
      .send(view);
  });

  app.get("/runs/:id", { schema: { params: RunParams, querystring: TenantQuery } }, async (request) => {
    const tenant = readTenant(credentialOf(request), request.query.tenant);
    return readRun(deps.store, tenant, request.params.id);
  });

  app.get("/runs/:id/events", { schema: { params: RunParams, querystring: TenantQuery } }, async (request) => {
    const tenant = readTenant(credentialOf(request), request.query.tenant);
    const events = await readRunEvents(deps.store, tenant, request.params.id);
    return {
      events: events.map((e) => ({ seq: e.seq, subject: e.subject, time: e.time.toISOString(), event: e.event })),
    };
  });
};
