import { readFileSync } from "node:fs";
import type { FastifyPluginAsync, FastifyReply } from "fastify";

const DIR = new URL("./dashboard/", import.meta.url);
const TYPES: Readonly<Record<string, string>> = {
  html: "text/html; charset=utf-8",
  js: "text/javascript; charset=utf-8",
  css: "text/css; charset=utf-8",
};
/** The dashboard's files (plain ES modules and CSS: no build step), read once at start-up. */
export const DASHBOARD_FILES = [
  "app.js",
  "api.js",
  "dom.js",
  "runs-page.js",
  "run-page.js",
  "fork-control.js",
  "wait-control.js",
  "operator-page.js",
  "schedules-page.js",
  "style.css",
] as const;

// Scripts and styles only from this origin, fetch only to it: no inline code, nothing third-party.
const CSP = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; frame-ancestors 'none'";

/**
 * `GET /` (the page) and `GET /ui/<file>` (its modules). Nothing here holds a secret: the token is
 * typed by the user, kept in sessionStorage and sent as a bearer header to `/v1/*` (feeds are read
 * with fetch, not EventSource, which cannot send headers and would put the token in the URL).
 */
export const dashboardRoute: FastifyPluginAsync = async (app) => {
  const file = (name: string) => readFileSync(new URL(name, DIR), "utf8");
  const send = (body: string, type: string) => ({ body, type });
  const files = new Map(DASHBOARD_FILES.map((n) => [n, send(file(n), TYPES[n.split(".").pop()!]!)]));
  const index = send(file("index.html"), TYPES.html!);
  const serve = (f: { body: string; type: string }) => (_request: unknown, reply: FastifyReply) =>
    reply
      .header("content-type", f.type)
      .header("content-security-policy", CSP)
      .header("cache-control", "no-cache")
      .send(f.body);
  app.get("/", { schema: { hide: true } }, serve(index));
  for (const [name, f] of files) app.get(`/ui/${name}`, { schema: { hide: true } }, serve(f));
};
