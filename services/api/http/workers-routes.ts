import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { z } from "zod";
import { readTenant } from "../domain/access.ts";
import { principalOf } from "../shell/cancel-run.ts";
import type { ApiDeps } from "../shell/deps.ts";
import { deployView, requestDeploy } from "../shell/worker-deploys.ts";
import { readDeploys } from "../../../platform/worker-deploys.ts";
import { credentialOf } from "./auth.ts";

const TenantQuery = z.object({ tenant: z.string().max(200).optional() }).strict();
const DeployBody = z
  .object({
    waitMs: z
      .number()
      .int()
      .min(0)
      .max(60_000)
      .default(20_000)
      .describe("how long to wait for the provisioner's `worker.deployed` answering the request"),
  })
  .strict()
  .default({ waitMs: 20_000 });
const Deployed = z
  .object({
    version: z.string(),
    image: z.string().nullable(),
    kinds: z.array(z.string()),
    previous: z.string().nullable(),
    requestedBy: z.string().nullable(),
    seq: z.number(),
  })
  .nullable();
const DeployViewAnswer = z.object({
  tenantId: z.string(),
  deployed: Deployed,
  pendingRequestSeq: z.number().nullable(),
});
const DeployAnswer = DeployViewAnswer.extend({
  outcome: z.enum(["deployed", "requested"]).describe("requested: the provisioner had not answered within waitMs"),
  requestSeq: z.number().describe("the sequence of the `worker.deploy-requested` appended"),
});

/**
 * A tenant's worker deploys (docs/worker-versions.md "Deploys as events"), tenant-scoped (an
 * operator names the tenant with `?tenant=`): `GET /workers` the last deploy, `POST
 * /workers/deploy` asks the provisioner to deploy the worker its configuration names now, recorded
 * with the credential that asked. New runs then go to that version; older runtimes drain.
 */
export const workersRoutes: FastifyPluginAsyncZod<{ deps: ApiDeps }> = async (app, { deps }) => {
  app.get(
    "/workers",
    { schema: { querystring: TenantQuery, response: { 200: DeployViewAnswer } } },
    async (request) => {
      const tenant = readTenant(credentialOf(request), request.query.tenant);
      return deployView(tenant, await readDeploys(deps.store, tenant));
    },
  );
  app.post(
    "/workers/deploy",
    { schema: { querystring: TenantQuery, body: DeployBody, response: { 200: DeployAnswer, 202: DeployAnswer } } },
    async (request, reply) => {
      const credential = credentialOf(request);
      const tenant = readTenant(credential, request.query.tenant);
      const waitMs = request.body?.waitMs ?? 20_000;
      const answer = await requestDeploy(deps, tenant, principalOf(credential), request.id, waitMs);
      return reply.code(answer.outcome === "deployed" ? 200 : 202).send(answer);
    },
  );
};
