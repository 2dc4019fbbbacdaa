import { readFileSync } from "node:fs";
import type { FastifyPluginAsync } from "fastify";

/**
 * `GET /`: one static HTML page with a little JS, no build step. It holds no secret: the token is
 * typed by the user, kept in sessionStorage and sent as a bearer header (the feed is read with
 * fetch, not EventSource, which cannot send headers and would put the token in the URL).
 */
export const dashboardRoute: FastifyPluginAsync = async (app) => {
  const html = readFileSync(new URL("./dashboard.html", import.meta.url), "utf8");
  app.get("/", async (_request, reply) =>
    reply
      .header("content-type", "text/html; charset=utf-8")
      .header("content-security-policy", "default-src 'self'; script-src 'unsafe-inline'; style-src 'unsafe-inline'")
      .send(html),
  );
};
