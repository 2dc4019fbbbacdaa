import { once } from "node:events";
import type { ServerResponse } from "node:http";
import type { Socket } from "node:net";
import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { z } from "zod";
import { feedScope } from "../domain/access.ts";
import type { ApiDeps } from "../shell/deps.ts";
import type { FeedFrame } from "../shell/event-feed.ts";
import { credentialOf } from "./auth.ts";

const EventsQuery = z.object({ tenant: z.string().max(200).optional() }).strict();
/** `Last-Event-ID` is the stream sequence of the last event the client saw. */
const EventsHeaders = z.object({
  "last-event-id": z
    .string()
    .regex(/^\d{1,15}$/, "Last-Event-ID must be a stream sequence (digits)")
    .optional(),
});

const KEEPALIVE_MS = 15_000;

/** One SSE frame: `id:` is the stream sequence, so a reconnecting client resumes exactly after it. */
export function sseFrame(frame: FeedFrame): string {
  switch (frame.kind) {
    case "event":
      return `id: ${frame.seq}\ndata: ${JSON.stringify({ seq: frame.seq, subject: frame.subject, time: frame.time, event: frame.event })}\n\n`;
    case "invalid":
      return `id: ${frame.seq}\nevent: invalid\ndata: ${JSON.stringify(frame)}\n\n`;
    case "caught-up":
      return `event: caught-up\ndata: ${JSON.stringify({ seq: frame.seq })}\n\n`;
    default:
      return assertNever(frame);
  }
}

/**
 * `GET /events`: Server-Sent Events straight from JetStream. A tenant sees its own tenant-scoped
 * events only; an operator sees everything, or one tenant with `?tenant=`. Resumes after
 * `Last-Event-ID`. Every check happens before the response is taken over, so refusals still go
 * through the error handler; once streaming, a failure ends the stream and the client resumes.
 */
export const eventsRoute: FastifyPluginAsyncZod<{ deps: ApiDeps }> = async (app, { deps }) => {
  // Sockets that carried a feed, until they are gone. close() must not wait for them: a live feed
  // never ends by itself, and an ended one may linger half-closed until the client lets go.
  // Cutting them is safe: clients resume from Last-Event-ID.
  const sockets = new Set<Socket>();
  app.addHook("preClose", async () => {
    for (const s of sockets) s.destroy();
  });

  app.get("/events", { schema: { querystring: EventsQuery, headers: EventsHeaders } }, async (request, reply) => {
    const scope = feedScope(credentialOf(request), request.query.tenant);
    const after = Number(request.headers["last-event-id"] ?? 0);
    const abort = new AbortController();
    const frames = deps.feed.follow(scope, after, abort.signal)[Symbol.asyncIterator]();
    // Open the feed before answering, so a JetStream failure is still an error answer, not an empty stream.
    const first = await frames.next();
    reply.hijack();
    const res = reply.raw;
    const socket = res.socket;
    if (socket) {
      sockets.add(socket);
      socket.once("close", () => sockets.delete(socket));
    }
    // A feed's socket is never reused for another request: it closes when the feed ends.
    res.writeHead(200, {
      "content-type": "text/event-stream; charset=utf-8",
      "cache-control": "no-cache",
      "x-accel-buffering": "no",
      connection: "close",
    });
    res.on("close", () => abort.abort());
    const keepalive = setInterval(() => res.write(": keepalive\n\n"), KEEPALIVE_MS);
    keepalive.unref();
    try {
      res.write("retry: 2000\n\n");
      for (let r = first; !r.done && !abort.signal.aborted; r = await frames.next())
        await write(res, sseFrame(r.value), abort.signal);
    } catch (e) {
      request.log.warn({ err: e }, "event feed ended with an error");
    } finally {
      clearInterval(keepalive);
      abort.abort();
      await frames.return?.();
      res.end();
    }
  });
};

/** Writes with backpressure: waits for `drain` (or the client leaving) when the socket buffer is full. */
async function write(res: ServerResponse, chunk: string, signal: AbortSignal): Promise<void> {
  if (res.write(chunk) || signal.aborted) return;
  await once(res, "drain", { signal }).catch(() => undefined);
}

function assertNever(x: never): never {
  throw new Error(`unhandled feed frame ${JSON.stringify(x)}`);
}
