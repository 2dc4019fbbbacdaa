import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { z } from "zod";
import { SharedRunId, WaitName } from "../../../contracts/index.ts";
import { signallingTenant } from "../domain/signal.ts";
import type { ApiDeps } from "../shell/deps.ts";
import { signalRun } from "../shell/signal-run.ts";
import { credentialOf } from "./auth.ts";

const SignalParams = z.object({ id: SharedRunId, name: WaitName });
const SignalBody = z
  .object({
    payload: z.json().describe("the wait step's output; must fit the wait's schema"),
    signalId: z.string().min(1).max(128).optional().describe("idempotency key: a repeat answers the first signal"),
  })
  .strict();
const SignalAnswer = z.object({
  outcome: z.enum(["accepted", "duplicate"]).describe("202 written now; 200 the same signalId was accepted before"),
  signal: z.object({
    name: z.string(),
    stepId: z.string(),
    by: z.string().describe("the verified principal"),
    signalId: z.string().nullable(),
    payloadDigest: z.string(),
    seq: z.number().int(),
  }),
});

/**
 * `POST /v1/runs/:id/signals/:name` resolves the run's wait `name` (docs/control-flow.md "Waits"):
 * the principal is the bearer token's; another tenant's run is 404, a token that is no resolver 403,
 * a payload that does not fit 400, and none of them writes an event.
 */
export const signalsRoute: FastifyPluginAsyncZod<{ deps: ApiDeps }> = async (app, { deps }) => {
  app.post(
    "/runs/:id/signals/:name",
    { schema: { params: SignalParams, body: SignalBody, response: { 200: SignalAnswer, 202: SignalAnswer } } },
    async (request, reply) => {
      const who = signallingTenant(credentialOf(request));
      const { id, name } = request.params;
      const a = await signalRun(deps, who, id, name, request.body, request.id);
      return reply.code(a.outcome === "accepted" ? 202 : 200).send(a);
    },
  );
};
