import { timingSafeEqual } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { selfIncarnation } from "../../../platform/process-incarnation.ts";

/** Where a pooled runtime takes its binding (platform/hosts/pool-binding.ts sends it). */
export const BIND_PATH = "/v1/pool/bind"; // platform/hosts/pool-binding.ts POOL_BIND_PATH
const MAX_BODY = 1 << 20;
/** Variables a binding may set: the runtime's own (DROVER_*) and its NATS connection's. */
const BINDABLE = /^(?:DROVER_[A-Z0-9_]+|NATS_URL|NATS_CREDS|NATS_CA_FILE)$/;
/** The pool's own variables: gone from the environment before the bound runtime starts. */
const POOL_VARS = ["DROVER_POOL_BIND_PORT", "DROVER_POOL_TOKEN"] as const;

export type BindAnswer =
  | { readonly ok: true; readonly port: number; readonly hostIncarnation: string }
  | { readonly ok: false; readonly detail: string };

export interface Binding {
  /** Answers the provisioner's bind request (once the runtime serves commands, or why it could not). */
  answer(a: BindAnswer): Promise<void>;
}

/**
 * A pooled runtime (hosts.md "Warm pool"): the process has loaded all of the runtime's code but
 * holds no identity, tenant, command token or NATS credential, and has no NATS connection. It
 * listens on DROVER_BIND_HOST:DROVER_POOL_BIND_PORT for exactly one binding, authenticated by
 * DROVER_POOL_TOKEN (the pool member's own token, derived like a command token), prints
 * `{"event":"pool-listening",...}`, and resolves with `env` rewritten to the binding: the pool's
 * variables removed, the binding's (identity, sizing, command token, NATS credential, tenant code)
 * set. A second binding, a wrong token or a malformed body is refused and changes nothing. While
 * unbound it answers `GET /readyz` and `/healthz` (a Kubernetes member's readiness probe); once a
 * binding is taken it stops listening, so the bound runtime may reuse the port.
 */
export async function awaitBinding(env: NodeJS.ProcessEnv): Promise<Binding> {
  const token = Buffer.from(env.DROVER_POOL_TOKEN ?? "");
  const port = Number(env.DROVER_POOL_BIND_PORT);
  const bindHost = env.DROVER_BIND_HOST ?? "127.0.0.1";
  for (const v of POOL_VARS) delete env[v];
  if (token.length < 16 || !Number.isInteger(port) || port < 0) {
    process.stderr.write("drover runtime: pooled start needs DROVER_POOL_TOKEN (≥ 16) and DROVER_POOL_BIND_PORT\n");
    process.exit(2);
  }
  let bound: ServerResponse | undefined;
  let resolveBinding: (b: Binding) => void = () => undefined;
  const binding = new Promise<Binding>((r) => (resolveBinding = r));
  const server = createServer((req, res) => {
    void take(req, res).catch((e: unknown) => reply(res, 400, { error: String((e as Error).message ?? e) }));
  });
  async function take(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const arrived = Date.now();
    // A Kubernetes member's readiness probe (its bind listener is on the ops port): alive, unbound.
    if (req.method === "GET" && (req.url === "/readyz" || req.url === "/healthz") && !bound)
      return reply(res, 200, { status: "ok", detail: "pooled: awaiting one binding" });
    if (req.method !== "POST" || req.url !== BIND_PATH) return reply(res, 404, { error: "not found" });
    const given = Buffer.from((req.headers.authorization ?? "").replace(/^Bearer /, ""));
    if (given.length !== token.length || !timingSafeEqual(given, token)) return reply(res, 401, { error: "bad token" });
    if (bound) return reply(res, 409, { error: "already bound" });
    const body = JSON.parse(await readBody(req)) as { env?: unknown };
    const vars = body.env;
    if (!vars || typeof vars !== "object") return reply(res, 400, { error: "env missing" });
    const entries = Object.entries(vars as Record<string, unknown>);
    const bad = entries.find(([k, v]) => !BINDABLE.test(k) || typeof v !== "string");
    if (bad) return reply(res, 400, { error: `variable ${bad[0]} cannot be bound` });
    if (!entries.some(([k]) => k === "DROVER_RUNTIME_INSTANCE_ID"))
      return reply(res, 400, { error: "DROVER_RUNTIME_INSTANCE_ID missing" });
    bound = res;
    for (const [k, v] of entries) env[k] = v as string;
    process.stdout.write(`${JSON.stringify({ event: "pool-bind-taken", arrived, takenMs: Date.now() - arrived })}\n`);
    // Stop listening at once (the answer goes over this request's connection): the bound runtime
    // may take the same port for its own listener (a Kubernetes member binds on the ops port).
    const closed = new Promise<void>((ok) => server.close(() => ok()));
    resolveBinding({
      async answer(a) {
        reply(res, a.ok ? 200 : 500, a);
        await closed;
      },
    });
  }
  // Port 0 (as the provisioner asks): the kernel picks a free one, announced below.
  const listening = await new Promise<number>((ok, fail) => {
    server.once("error", fail);
    server.listen(port, bindHost, () => ok((server.address() as { port: number }).port));
  });
  process.stdout.write(
    `${JSON.stringify({ event: "pool-listening", port: listening, hostIncarnation: selfIncarnation(env.DROVER_POD_UID) })}\n`,
  );
  return binding;
}

function reply(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { "content-type": "application/json", connection: "close" });
  res.end(JSON.stringify(body));
}

async function readBody(req: IncomingMessage): Promise<string> {
  let size = 0;
  const parts: Buffer[] = [];
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY) throw new Error("binding too large");
    parts.push(chunk as Buffer);
  }
  return Buffer.concat(parts).toString("utf8");
}
