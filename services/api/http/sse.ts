import { assertNever } from "../../../contracts/assert-never.ts";
import { once } from "node:events";
import type { ServerResponse } from "node:http";
import type { Socket } from "node:net";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { SseFrame } from "../shell/event-feed.ts";
import type { FeedSlots } from "./abuse-limits.ts";

const KEEPALIVE_MS = 15_000;

/** One SSE frame: `id:` is the stream sequence, so a reconnecting client resumes exactly after it. */
export function sseFrame(frame: SseFrame): string {
  switch (frame.kind) {
    case "event":
      return `id: ${frame.seq}\ndata: ${JSON.stringify({ seq: frame.seq, subject: frame.subject, time: frame.time, event: frame.event })}\n\n`;
    case "invalid":
      return `id: ${frame.seq}\nevent: invalid\ndata: ${JSON.stringify(frame)}\n\n`;
    case "caught-up":
      return `event: caught-up\ndata: ${JSON.stringify({ seq: frame.seq })}\n\n`;
    case "end":
      return `event: end\ndata: ${JSON.stringify({ status: frame.status, seq: frame.seq })}\n\n`;
    default:
      return assertNever(frame, "feed frame");
  }
}

export type SseServe = (
  request: FastifyRequest,
  reply: FastifyReply,
  open: (signal: AbortSignal) => AsyncIterable<SseFrame>,
) => Promise<void>;

/**
 * Serving Server-Sent Events in one plugin: `serve` opens the frames (so a failure to open is still
 * an error answer), then takes the response over and writes frames with backpressure until the
 * frames end or the client leaves. Sockets that carried a feed are cut on close: a live feed never
 * ends by itself, and clients resume from Last-Event-ID.
 */
export function sseSupport(app: FastifyInstance, slots?: FeedSlots): SseServe {
  const sockets = new Set<Socket>();
  app.addHook("preClose", async () => {
    for (const s of sockets) s.destroy();
  });
  const serve: SseServe = async (request, reply, open) => {
    const abort = new AbortController();
    const frames = open(abort.signal)[Symbol.asyncIterator]();
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
      "x-request-id": request.id,
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
  };
  // The credential's feed slot is taken before the answer is taken over (a refusal is a normal 429)
  // and given back however the feed ends.
  return async (request, reply, open) => {
    const release = slots ? slots.acquire(request) : () => undefined;
    try {
      await serve(request, reply, open);
    } finally {
      release();
    }
  };
}

/** Writes with backpressure: waits for `drain` (or the client leaving) when the socket buffer is full. */
async function write(res: ServerResponse, chunk: string, signal: AbortSignal): Promise<void> {
  if (res.write(chunk) || signal.aborted) return;
  await once(res, "drain", { signal }).catch(() => undefined);
}
