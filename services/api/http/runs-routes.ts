import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { z } from "zod";
import {
  DroverError,
  SharedRunId,
  StepOutput,
  WorkerVersion,
  type Credential,
  type TenantId,
} from "../../../contracts/index.ts";
import { readTenant } from "../domain/access.ts";
import { ListRunsQuery, runFilter } from "../domain/run-list.ts";
import { runView } from "../domain/run-view.ts";
import { SubmitRunBody } from "../domain/submission.ts";
import { ForkRunBody } from "../domain/fork.ts";
import { forkRun } from "../shell/fork-run.ts";
import { principalOf, requestCancel } from "../shell/cancel-run.ts";
import type { ApiDeps } from "../shell/deps.ts";
import { listRuns } from "../shell/list-runs.ts";
import { openRunFeed } from "../shell/run-feed.ts";
import { readRunDetail, readRunEvents } from "../shell/run-queries.ts";
import { createSubmitter } from "../shell/submit-run.ts";
import { credentialOf } from "./auth.ts";
import { LastEventIdHeaders } from "./events-route.ts";
import {
  CancelAnswer,
  RunDetailAnswer,
  RunEventsAnswer,
  RunListAnswer,
  RunViewAnswer,
  UpgradeAnswer,
} from "./run-schemas.ts";
import { upgradeRun } from "../shell/upgrade-run.ts";
import type { FeedSlots } from "./abuse-limits.ts";
import { sseSupport } from "./sse.ts";

const RunParams = z.object({ id: SharedRunId });
const TenantQuery = z.object({ tenant: z.string().max(200).optional() }).strict();
const IdempotencyHeaders = z.object({
  "idempotency-key": z.string().min(1).max(200).optional().describe("same meaning as the body's idempotencyKey"),
});
const CancelBody = z
  .object({ reason: z.string().max(500).default("") })
  .strict()
  .default({ reason: "" });
const UpgradeBody = z
  .object({
    version: WorkerVersion.optional().describe(
      "the worker version to move the run to; absent: the tenant's current one",
    ),
  })
  .strict()
  .default({});

/**
 * The run routes. Submissions and reruns need a tenant credential (the run's tenant is the
 * token's); reads and cancels are confined to one tenant's subjects (an operator names the tenant
 * with `?tenant=`).
 */
export const runsRoutes: FastifyPluginAsyncZod<{ deps: ApiDeps; feeds?: FeedSlots }> = async (app, { deps, feeds }) => {
  const submit = createSubmitter(deps);
  const serve = sseSupport(app, feeds);
  const tenantOf = (credential: Credential): TenantId => {
    if (credential.role !== "tenant")
      throw new DroverError(
        "forbidden",
        "runs are submitted with a tenant credential; the run's tenant is the token's",
      );
    return credential.tenantId;
  };

  app.post(
    "/runs",
    {
      schema: {
        description:
          "Submits a run for the token's tenant. 429 answers carry Retry-After and write nothing: tenant-queue-full (maxQueuedRuns), submission-rate-limited (the tenant's submissionPace while its queue is deep), rate-limited (the token's api.rateLimit); docs/errors.md.",
        body: SubmitRunBody,
        headers: IdempotencyHeaders,
        response: { 200: RunViewAnswer, 201: RunViewAnswer },
      },
    },
    async (request, reply) => {
      const tenant = tenantOf(credentialOf(request));
      const header = request.headers["idempotency-key"];
      if (header !== undefined && request.body.idempotencyKey !== undefined && header !== request.body.idempotencyKey)
        throw new DroverError("contract-violation", "the Idempotency-Key header and the body's idempotencyKey differ");
      const body = header === undefined ? request.body : { ...request.body, idempotencyKey: header };
      const { run, created } = await submit(tenant, body, request.id);
      const view = runView(run);
      if (view === undefined) throw new Error("a submitted run folded to no view");
      return reply
        .code(created ? 201 : 200)
        .header("location", `/v1/runs/${view.sharedRunId}`)
        .send(view);
    },
  );

  app.get("/runs", { schema: { querystring: ListRunsQuery, response: { 200: RunListAnswer } } }, async (request) => {
    const tenant = readTenant(credentialOf(request), request.query.tenant);
    if (!deps.readModels)
      throw new DroverError("read-model-unavailable", "the run list is a read model and MONGO_URL is not set");
    const q = request.query;
    // The projector's position, read alongside the page (one round trip less than after it).
    const [page, asOf] = await Promise.all([
      listRuns(deps.readModels, tenant, runFilter(q), q.limit, q.cursor === undefined ? undefined : Number(q.cursor)),
      deps.readModels.position(),
    ]);
    return { ...page, asOf };
  });

  app.get(
    "/runs/:id",
    { schema: { params: RunParams, querystring: TenantQuery, response: { 200: RunDetailAnswer } } },
    async (request) => {
      const tenant = readTenant(credentialOf(request), request.query.tenant);
      const view = await readRunDetail(deps.store, tenant, request.params.id);
      if (!view.outputRef || !deps.outputs) return view;
      const stored = await deps.outputs.get(view.outputRef);
      return { ...view, output: JSON.parse(new TextDecoder().decode(stored)) as unknown };
    },
  );

  app.get(
    "/runs/:id/events",
    {
      schema: {
        params: RunParams,
        querystring: TenantQuery,
        headers: LastEventIdHeaders,
        response: { 200: RunEventsAnswer },
      },
    },
    async (request, reply) => {
      const tenant = readTenant(credentialOf(request), request.query.tenant);
      if ((request.headers.accept ?? "").includes("text/event-stream")) {
        const after = Number(request.headers["last-event-id"] ?? 0);
        const open = await openRunFeed(deps, tenant, request.params.id, after);
        return serve(request, reply, open);
      }
      const { events, unreadable } = await readRunEvents(deps.store, tenant, request.params.id);
      return {
        events: events.map((e) => ({ seq: e.seq, subject: e.subject, time: e.time.toISOString(), event: e.event })),
        unreadableEvents: unreadable.map(({ seq, subject, error }) => ({ seq, subject, error })),
      };
    },
  );

  app.post(
    "/runs/:id/cancel",
    {
      schema: {
        params: RunParams,
        querystring: TenantQuery,
        body: CancelBody,
        response: { 200: CancelAnswer, 202: CancelAnswer },
      },
    },
    async (request, reply) => {
      const credential = credentialOf(request);
      const tenant = readTenant(credential, request.query.tenant);
      const outcome = await requestCancel(
        deps,
        tenant,
        request.params.id,
        principalOf(credential),
        request.body?.reason ?? "",
        request.id,
      );
      const run = await readRunDetail(deps.store, tenant, request.params.id);
      return reply.code(outcome === "cancelled" ? 200 : 202).send({ outcome, run });
    },
  );

  app.post(
    "/runs/:id/upgrade",
    {
      schema: {
        params: RunParams,
        querystring: TenantQuery,
        body: UpgradeBody,
        response: { 200: UpgradeAnswer },
      },
    },
    async (request) => {
      // Tenant-scoped like a cancel: operators name the tenant with ?tenant= (recorded as `by`).
      const credential = credentialOf(request);
      const tenant = readTenant(credential, request.query.tenant);
      const decision = await upgradeRun(
        deps,
        tenant,
        request.params.id,
        request.body?.version,
        principalOf(credential),
        request.id,
      );
      const run = await readRunDetail(deps.store, tenant, request.params.id);
      return decision.outcome === "upgrade"
        ? {
            outcome: "upgraded" as const,
            fromVersion: decision.fromVersion,
            toVersion: decision.toVersion,
            kinds: [...decision.kinds],
            run,
          }
        : { outcome: "already-on-version" as const, fromVersion: null, toVersion: decision.version, kinds: [], run };
    },
  );

  app.post(
    "/runs/:id/rerun",
    {
      schema: { params: RunParams, headers: IdempotencyHeaders, response: { 200: RunViewAnswer, 201: RunViewAnswer } },
    },
    async (request, reply) => {
      const tenant = tenantOf(credentialOf(request));
      const original = await readRunDetail(deps.store, tenant, request.params.id);
      if (original.dag === null)
        throw new DroverError("dag-invalid", `run ${original.sharedRunId} has no valid DAG to run again`, {
          details: { sharedRunId: original.sharedRunId, status: original.status },
        });
      const key = request.headers["idempotency-key"];
      const { run, created } = await submit(
        tenant,
        {
          dag: original.dag,
          labels: { ...original.labels },
          ...(original.input === null ? {} : { input: StepOutput.parse(original.input) }),
          ...(key === undefined ? {} : { idempotencyKey: key }),
        },
        request.id,
        original.sharedRunId,
      );
      const view = runView(run);
      if (view === undefined) throw new Error("a submitted run folded to no view");
      return reply
        .code(created ? 201 : 200)
        .header("location", `/v1/runs/${view.sharedRunId}`)
        .send(view);
    },
  );

  app.post(
    "/runs/:id/fork",
    {
      schema: {
        params: RunParams,
        querystring: TenantQuery,
        body: ForkRunBody,
        headers: IdempotencyHeaders,
        response: { 200: RunViewAnswer, 201: RunViewAnswer },
      },
    },
    async (request, reply) => {
      const credential = credentialOf(request);
      // Operators fork a tenant's run with ?tenant= (recorded as `by: operator:<name>`), like a cancel.
      const tenant = readTenant(credential, request.query.tenant);
      const header = request.headers["idempotency-key"];
      if (header !== undefined && request.body.idempotencyKey !== undefined && header !== request.body.idempotencyKey)
        throw new DroverError("contract-violation", "the Idempotency-Key header and the body's idempotencyKey differ");
      const body = header === undefined ? request.body : { ...request.body, idempotencyKey: header };
      const { run, created } = await forkRun(
        deps,
        submit,
        tenant,
        request.params.id,
        body,
        principalOf(credential),
        request.id,
      );
      const view = runView(run);
      if (view === undefined) throw new Error("a submitted fork folded to no view");
      return reply
        .code(created ? 201 : 200)
        .header("location", `/v1/runs/${view.sharedRunId}`)
        .send(view);
    },
  );
};
