import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance } from "fastify";
import swagger from "@fastify/swagger";
import {
  jsonSchemaTransform,
  serializerCompiler,
  validatorCompiler,
  type ZodTypeProvider,
} from "fastify-type-provider-zod";
import type { ApiDeps } from "../shell/deps.ts";
import { feedSlots, rateLimitByCredential } from "./abuse-limits.ts";
import { requireCredentials } from "./auth.ts";
import { dashboardRoute } from "./dashboard-route.ts";
import { errorHandler } from "./error-handler.ts";
import { eventsRoute } from "./events-route.ts";
import { forensicsRoutes } from "./forensics-routes.ts";
import { operatorRoutes } from "./operator-routes.ts";
import { opsRoutes } from "./ops-routes.ts";
import { runsRoutes } from "./runs-routes.ts";
import { signalsRoute } from "./signals-route.ts";
import { bulkRoutes } from "./bulk-routes.ts";
import { schedulesRoutes } from "./schedules-routes.ts";
import { stepCacheRoutes } from "./step-cache-routes.ts";
import { workersRoutes } from "./workers-routes.ts";

/** Bodies above this are refused with 413 before parsing: a DAG fits well below, and an event must stay under NATS' max payload. */
export const BODY_LIMIT_BYTES = 256 * 1024;

/**
 * Builds the API: `/v1/*` behind bearer-token authentication, the dashboard at `/`, one error
 * handler for everything. Does not listen; `main.ts` does, tests use `inject()` or `listen({ port: 0 })`.
 */
export async function buildApp(
  deps: ApiDeps,
  opts: { loggerInstance?: FastifyBaseLogger } = {},
): Promise<FastifyInstance> {
  const app = Fastify({
    ...(opts.loggerInstance ? { loggerInstance: opts.loggerInstance } : { logger: false }),
    // One log line per request (the onResponse hook below), not Fastify's two with serialized
    // request and response objects: they were ~9% of the api's CPU in W2 (bench/workloads, profiled).
    // (Through a LogController: the top-level option is deprecated in Fastify 5.12, FSTDEP023.)
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: BODY_LIMIT_BYTES,
    genReqId: () => deps.newId(),
    // Live SSE feeds are ended by the events plugin's preClose hook; anything else idle is closed at once.
    forceCloseConnections: "idle",
  }).withTypeProvider<ZodTypeProvider>();
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);
  app.setErrorHandler(errorHandler);
  // Every answer names its request (SSE answers set it themselves when they take the response over).
  app.addHook("onRequest", async (request, reply) => {
    void reply.header("x-request-id", request.id);
  });
  if (opts.loggerInstance)
    app.addHook("onResponse", async (request, reply) => {
      request.log.info(
        { method: request.method, url: request.url, statusCode: reply.statusCode, ms: Math.round(reply.elapsedTime) },
        "request",
      );
    });
  app.setNotFoundHandler((request, reply) =>
    reply.code(404).send({
      error: {
        code: "not-found",
        message: `no route ${request.method} ${request.url.split("?")[0]}`,
        retryable: false,
        details: {},
        requestId: request.id,
      },
    }),
  );

  // The OpenAPI document is generated from the routes' zod schemas (body, query, params, headers, responses).
  await app.register(swagger, {
    openapi: {
      openapi: "3.1.0",
      info: { title: "drover API", version: "1" },
      components: { securitySchemes: { bearer: { type: "http", scheme: "bearer" } } },
      security: [{ bearer: [] }],
    },
    transform: jsonSchemaTransform,
  });
  opsRoutes(app, deps);
  app.get("/v1/openapi.json", { schema: { hide: true } }, async () => app.swagger());

  await app.register(
    async (v1) => {
      requireCredentials(v1, deps.tokens);
      // After authentication: limits count per credential (docs/security.md "Abuse limits").
      await rateLimitByCredential(v1, deps.config);
      const feeds = feedSlots(deps.config.api.maxEventFeedsPerCredential);
      await v1.register(runsRoutes, { deps, feeds });
      await v1.register(signalsRoute, { deps });
      await v1.register(bulkRoutes, { deps });
      await v1.register(schedulesRoutes, { deps });
      await v1.register(stepCacheRoutes, { deps });
      await v1.register(workersRoutes, { deps });
      await v1.register(eventsRoute, { deps, feeds });
      await v1.register(operatorRoutes, { deps });
      await v1.register(forensicsRoutes, { deps });
    },
    { prefix: "/v1" },
  );
  await app.register(dashboardRoute);
  return app;
}
