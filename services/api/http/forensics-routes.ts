import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { z } from "zod";
import { DroverError, RuntimeFailureIncidentId, SharedRunId } from "../../../contracts/index.ts";
import { readTenant, requireOperator } from "../domain/access.ts";
import { incidentForTenant, publicLedgerRow, publicRow } from "../domain/forensics-view.ts";
import { runTimeline } from "../domain/timeline.ts";
import type { ApiDeps } from "../shell/deps.ts";
import type { ReadModels } from "../shell/read-models.ts";
import { credentialOf } from "./auth.ts";

const tenant = z.string().max(200).optional();
const limit = z.coerce.number().int().min(1).max(5000).default(500);
const flag = z.enum(["true", "false"]).transform((v) => v === "true");

const RunParams = z.object({ id: SharedRunId });
const IncidentParams = z.object({ id: RuntimeFailureIncidentId });
const TimelineQuery = z.object({ tenant }).strict();
const ForensicsQuery = z
  .object({ tenant, runId: SharedRunId.optional(), incidentId: RuntimeFailureIncidentId.optional(), limit })
  .strict();
const LedgerQuery = z
  .object({ tenant, since: z.coerce.number().int().min(0).default(0), recovery: flag.optional(), limit })
  .strict();

/** The incident as the tenant may see it (undefined when it holds none of the tenant's work). */
async function tenantIncident(rm: ReadModels, incidentId: string, tenantId: string) {
  const [doc, items] = await Promise.all([rm.incident(incidentId), rm.incidentItems(incidentId, tenantId)]);
  return incidentForTenant(doc, items, tenantId);
}

/** The read models, or `read-model-unavailable` (503) when the API runs without MONGO_URL. */
function readModelsOf(deps: ApiDeps): ReadModels {
  if (!deps.readModels)
    throw new DroverError(
      "read-model-unavailable",
      "the forensics read models are not configured (MONGO_URL is not set)",
    );
  return deps.readModels;
}

/**
 * The forensics queries over the MongoDB read models (recovery.md "Forensics and ledger"). The
 * tenant comes from the bearer token only; an operator names it with `?tenant=`. Another tenant's
 * run is `not-found`, another tenant's rows are simply absent, and an incident that holds none of
 * the tenant's work looks like no incident at all. `GET /incidents/:id` is for operators (403
 * otherwise) and shows every tenant's items. Every answer carries `asOf`, the stream sequence the
 * read models include.
 */
export const forensicsRoutes: FastifyPluginAsyncZod<{ deps: ApiDeps }> = async (app, { deps }) => {
  app.get("/runs/:id/timeline", { schema: { params: RunParams, querystring: TimelineQuery } }, async (request) => {
    const tenantId = readTenant(credentialOf(request), request.query.tenant);
    const rm = readModelsOf(deps);
    const asOf = await rm.position();
    const run = await rm.run(tenantId, request.params.id);
    if (!run)
      throw new DroverError("not-found", `no run ${request.params.id}`, {
        details: { sharedRunId: request.params.id },
      });
    const [executions, rows, incidents] = await Promise.all([
      rm.executions(tenantId, run.executionIds),
      rm.runLedger(tenantId, run.sharedRunId, run.executionIds),
      Promise.all(run.incidentIds.map((id) => tenantIncident(rm, id, tenantId))),
    ]);
    return {
      asOf,
      ...runTimeline(
        run,
        executions,
        rows,
        incidents.filter((i) => i !== undefined),
      ),
    };
  });

  app.get("/forensics", { schema: { querystring: ForensicsQuery } }, async (request) => {
    const { runId, incidentId, limit: max } = request.query;
    const tenantId = readTenant(credentialOf(request), request.query.tenant);
    const rm = readModelsOf(deps);
    const asOf = await rm.position();
    const [rows, incident] = await Promise.all([
      rm.forensics(tenantId, {
        ...(runId ? { sharedRunId: runId } : {}),
        ...(incidentId ? { incidentId } : {}),
        limit: max,
      }),
      incidentId ? tenantIncident(rm, incidentId, tenantId) : Promise.resolve(undefined),
    ]);
    return { asOf, tenantId, incident: incident ?? null, entries: rows.map(publicRow) };
  });

  app.get("/ledger", { schema: { querystring: LedgerQuery } }, async (request) => {
    const { since, recovery, limit: max } = request.query;
    const tenantId = readTenant(credentialOf(request), request.query.tenant);
    const rm = readModelsOf(deps);
    const asOf = await rm.position();
    const rows = await rm.ledger(tenantId, { since, limit: max, ...(recovery === undefined ? {} : { recovery }) });
    // `next` is the `since` of the following page: the last sequence answered, or `since` when nothing new.
    return { asOf, tenantId, entries: rows.map(publicLedgerRow), next: rows.at(-1)?.seq ?? since };
  });

  app.get("/incidents/:id", { schema: { params: IncidentParams } }, async (request) => {
    requireOperator(credentialOf(request));
    const rm = readModelsOf(deps);
    const asOf = await rm.position();
    const [doc, items, rows] = await Promise.all([
      rm.incident(request.params.id),
      rm.incidentItems(request.params.id, undefined),
      rm.incidentForensics(request.params.id),
    ]);
    if (!doc)
      throw new DroverError("not-found", `no incident ${request.params.id}`, {
        details: { incidentId: request.params.id },
      });
    return { asOf, incident: { ...publicRow(doc), items: items.map(publicRow) }, forensics: rows.map(publicRow) };
  });
};
