import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { z } from "zod";
import { feedScope } from "../domain/access.ts";
import { typeFilter } from "../domain/event-types.ts";
import type { ApiDeps } from "../shell/deps.ts";
import { credentialOf } from "./auth.ts";
import type { FeedSlots } from "./abuse-limits.ts";
import { sseSupport } from "./sse.ts";

const EventsQuery = z
  .object({
    tenant: z.string().max(200).optional(),
    from: z.literal("now").optional().describe("start after the stream's last event instead of from the beginning"),
    types: z.string().max(1000).optional().describe("comma-separated event types; `run.*` matches every run event"),
  })
  .strict();
/** `Last-Event-ID` is the stream sequence of the last event the client saw. */
export const LastEventIdHeaders = z.object({
  "last-event-id": z
    .string()
    .regex(/^\d{1,15}$/, "Last-Event-ID must be a stream sequence (digits)")
    .optional(),
});

/**
 * `GET /events`: Server-Sent Events straight from JetStream. A tenant sees its own tenant-scoped
 * events only; an operator sees everything, or one tenant with `?tenant=`. Resumes after
 * `Last-Event-ID`, or starts after the stream's last event with `?from=now`; `?types=` keeps only
 * those event types, filtered by the server on their subjects (`caught-up` always passes, and an
 * invalid frame on those subjects). Every check happens before the
 * response is taken over, so refusals still go through the error handler; once streaming, a
 * failure ends the stream and the client resumes.
 */
export const eventsRoute: FastifyPluginAsyncZod<{ deps: ApiDeps; feeds?: FeedSlots }> = async (
  app,
  { deps, feeds },
) => {
  const serve = sseSupport(app, feeds);
  app.get(
    "/events",
    { schema: { querystring: EventsQuery, headers: LastEventIdHeaders, produces: ["text/event-stream"] } },
    async (request, reply) => {
      const scope = feedScope(credentialOf(request), request.query.tenant);
      const header = request.headers["last-event-id"];
      const after = header !== undefined ? Number(header) : request.query.from === "now" ? await deps.feed.head() : 0;
      const keep = typeFilter(request.query.types);
      await serve(request, reply, async function* (signal) {
        for await (const frame of deps.feed.follow(scope, after, signal, request.query.types))
          if (frame.kind !== "event" || keep(frame.event.type)) yield frame;
      });
    },
  );
};
