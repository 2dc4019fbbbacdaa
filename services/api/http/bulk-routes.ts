import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { z } from "zod";
import { readTenant } from "../domain/access.ts";
import { BulkCancelBody, BulkForkBody } from "../domain/bulk.ts";
import { bulkCancel, bulkFork } from "../shell/bulk-runs.ts";
import { principalOf } from "../shell/cancel-run.ts";
import type { ApiDeps } from "../shell/deps.ts";
import { createSubmitter } from "../shell/submit-run.ts";
import { credentialOf } from "./auth.ts";

const TenantQuery = z.object({ tenant: z.string().max(200).optional() }).strict();

const BulkAnswer = z
  .object({
    dryRun: z.boolean(),
    matched: z.number().describe("runs that matched in the part of the list this request covered"),
    runs: z.array(
      z.object({
        sharedRunId: z.string(),
        status: z.string().describe("the run's status in the run list when it was selected"),
        outcome: z.string().optional().describe("requested | already-requested | cancelled | forked | already-forked"),
        forkRunId: z.string().optional(),
        error: z.object({ code: z.string(), message: z.string() }).optional(),
      }),
    ),
    next: z.string().optional().describe("cursor: repeat the request with it to continue with older runs"),
  })
  .describe("what a bulk request did, run by run (with dryRun, what it would act on)");

/**
 * Bulk forms of cancel and fork over the runs a filter selects from the run list, for tenants
 * (their own runs) and operators (`?tenant=`). `dryRun: true` answers the selection and changes
 * nothing. Each run is acted on exactly as by its single-run route, recorded with the identity
 * that asked (`by`).
 */
export const bulkRoutes: FastifyPluginAsyncZod<{ deps: ApiDeps }> = async (app, { deps }) => {
  const submit = createSubmitter(deps);
  app.post(
    "/runs/bulk-cancel",
    { schema: { querystring: TenantQuery, body: BulkCancelBody, response: { 200: BulkAnswer } } },
    async (request) => {
      const credential = credentialOf(request);
      const tenant = readTenant(credential, request.query.tenant);
      return bulkCancel(deps, tenant, request.body, principalOf(credential), request.id);
    },
  );
  app.post(
    "/runs/bulk-fork",
    { schema: { querystring: TenantQuery, body: BulkForkBody, response: { 200: BulkAnswer } } },
    async (request) => {
      const credential = credentialOf(request);
      const tenant = readTenant(credential, request.query.tenant);
      return bulkFork(deps, submit, tenant, request.body, principalOf(credential), request.id);
    },
  );
};
