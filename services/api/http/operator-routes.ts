import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { staleHeartbeatMsOf } from "../../../contracts/index.ts";
import { requireOperator } from "../domain/access.ts";
import { capacityEntry, runtimeRow } from "../domain/runtime-view.ts";
import type { ApiDeps } from "../shell/deps.ts";
import { credentialOf } from "./auth.ts";

/** `GET /runtimes` and `GET /capacity`: every tenant's runtimes, so operator credentials only (403 for tenants). */
export const operatorRoutes: FastifyPluginAsyncZod<{ deps: ApiDeps }> = async (app, { deps }) => {
  app.get("/runtimes", async (request) => {
    requireOperator(credentialOf(request));
    return { runtimes: (await deps.capacity.descriptors()).map(runtimeRow) };
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
};
