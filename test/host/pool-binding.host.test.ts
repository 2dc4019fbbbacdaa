import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { once } from "node:events";
import { afterEach, describe, expect, it } from "vitest";
import { POOL_BIND_PATH, postBinding } from "../../platform/hosts/pool-binding.ts";

// Boundary: a real HTTP server on loopback standing in for a pooled runtime's bind listener
// (services/runtime/shell/pool-bind.ts answers the same way).
let server: Server | undefined;
afterEach(async () => {
  server?.closeAllConnections();
  if (server) await new Promise<void>((ok) => server!.close(() => ok()));
  server = undefined;
});

async function member(handle: (req: IncomingMessage, body: string, res: ServerResponse) => void): Promise<string> {
  server = createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on("data", (c: Buffer) => parts.push(c));
    req.on("end", () => handle(req, Buffer.concat(parts).toString("utf8"), res));
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  return `http://127.0.0.1:${(server.address() as { port: number }).port}`;
}

const answer = (res: ServerResponse, status: number, body: unknown) => {
  res.writeHead(status, { "content-type": "application/json", connection: "close" });
  res.end(JSON.stringify(body));
};

describe("postBinding: the provisioner's side of a warm pool bind over real HTTP", () => {
  it("posts the environment with the member's token and returns the bound runtime's port and incarnation", async () => {
    const seen: { method?: string; url?: string; auth?: string; body?: unknown }[] = [];
    const url = await member((req, body, res) => {
      seen.push({ method: req.method, url: req.url, auth: req.headers.authorization, body: JSON.parse(body) });
      answer(res, 200, { ok: true, port: 4123, hostIncarnation: "pid:1:2" });
    });
    const r = await postBinding(url, "pool-token-0123456789", { DROVER_RUNTIME_INSTANCE_ID: "rt-a-1" }, 5_000);
    expect(r).toEqual({ ok: true, port: 4123, hostIncarnation: "pid:1:2" });
    expect(seen).toEqual([
      {
        method: "POST",
        url: POOL_BIND_PATH,
        auth: "Bearer pool-token-0123456789",
        body: { env: { DROVER_RUNTIME_INSTANCE_ID: "rt-a-1" } },
      },
    ]);
  });

  it("a refusal, a non-JSON answer, a refused connection and a member that never answers are { ok: false }, never a rejection", async () => {
    const url = await member((req, _body, res) => {
      if (req.headers.authorization !== "Bearer right-token-0123456") return answer(res, 401, { error: "bad token" });
      res.writeHead(500).end("not json");
    });
    expect(await postBinding(url, "wrong-token-0123456", {}, 5_000)).toEqual({
      ok: false,
      detail: 'bind answered 401: {"error":"bad token"}',
    });
    expect(await postBinding(url, "right-token-0123456", {}, 5_000)).toEqual({
      ok: false,
      detail: "bind answered 500 with no JSON: not json",
    });
    await new Promise<void>((ok) => server!.close(() => ok()));
    server = undefined;
    const refused = await postBinding(url, "right-token-0123456", {}, 5_000);
    expect(refused).toMatchObject({ ok: false, detail: expect.stringMatching(/^bind failed: .*ECONNREFUSED/) });

    const silent = await member(() => undefined); // reads the binding, never answers
    const t0 = Date.now();
    const r = await postBinding(silent, "right-token-0123456", {}, 300);
    expect(r).toEqual({ ok: false, detail: "bind failed: no answer within 300 ms" });
    expect(Date.now() - t0).toBeGreaterThanOrEqual(290);
  });
});
