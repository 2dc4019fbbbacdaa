import { createServer } from "node:http";
import { Server, ServerCredentials } from "@grpc/grpc-js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ROUTING_HEADER, TOKEN_HEADER, type RuntimeCommand, type Transport } from "../../contracts/index.ts";
import { closeRuntimeClients, sendCommand } from "../../platform/runtime-client.ts";
import { RUNTIME_COMMAND_SERVICE } from "../../platform/runtime-grpc-service.ts";
import { freePort } from "../../platform/local-servers.ts";

// Boundary: the platform runtime client over real loopback sockets (HTTP and h2c gRPC) against an
// impostor that answers well-formed results naming another runtime. Proves the caller-side identity
// check, not the runtime (runtime-commands.host.test.ts proves that against real runtime processes).
const impostorResult = () =>
  Buffer.from(
    JSON.stringify({
      success: true,
      operation: "GetQueueStatus",
      runtimeInstanceId: "rt-impostor",
      hostIncarnation: "pid:1:1",
      payload: {},
      timings: { receivedAt: new Date().toISOString(), handledMs: 0 },
    }),
  );
const endpoints: Record<Transport, string> = { http: "", grpc: "" };
let http: ReturnType<typeof createServer>;
let grpc: Server;

beforeAll(async () => {
  http = createServer((_req, res) => {
    res.writeHead(200, { "content-type": "application/json" }).end(impostorResult());
  });
  await new Promise<void>((ok) => http.listen(0, "127.0.0.1", ok));
  const addr = http.address();
  endpoints.http = `127.0.0.1:${typeof addr === "object" && addr ? addr.port : 0}`;
  grpc = new Server();
  grpc.addService(RUNTIME_COMMAND_SERVICE, {
    ExecuteCommand: (_call: unknown, cb: (e: null, b: Buffer) => void) => cb(null, impostorResult()),
  });
  const port = await new Promise<number>((ok, fail) =>
    grpc.bindAsync("127.0.0.1:0", ServerCredentials.createInsecure(), (e, p) => (e ? fail(e) : ok(p))),
  );
  endpoints.grpc = `127.0.0.1:${port}`;
});
afterAll(async () => {
  closeRuntimeClients();
  await new Promise<void>((ok) => http.close(() => ok()));
  await new Promise<void>((ok) => grpc.tryShutdown(() => ok()));
});

const probe = {
  operation: "GetQueueStatus",
  runtimeInstanceId: "rt-target",
  correlationId: "c",
  payload: {},
} as RuntimeCommand;

describe.each(["http", "grpc"] as const)("sendCommand over %s", (transport) => {
  it("treats a success answered by another RuntimeInstanceId as runtime-identity-mismatch, never as success", async () => {
    await expect(sendCommand(endpoints[transport], transport, probe, "token-token-token", 5000)).rejects.toMatchObject({
      code: "runtime-identity-mismatch",
      details: { expected: "rt-target", actual: "rt-impostor" },
    });
  });

  it("reports a closed port as runtime-unreachable", async () => {
    const port = await freePort();
    await expect(sendCommand(`127.0.0.1:${port}`, transport, probe, "token-token-token", 2000)).rejects.toMatchObject({
      code: "runtime-unreachable",
    });
  });
});

// Boundary: the HTTP transport's own socket handling (node:http with a keep-alive pool) against
// real loopback servers: what reaches the runtime, connection reuse, and each way an answer fails.
describe("sendCommand over http: the exchange itself", () => {
  const answer = (id: string) =>
    JSON.stringify({
      success: true,
      operation: "GetQueueStatus",
      runtimeInstanceId: id,
      hostIncarnation: "pid:1:1",
      payload: {},
      timings: { receivedAt: new Date().toISOString(), handledMs: 0 },
    });
  const serve = async (handler: Parameters<typeof createServer>[1]) => {
    const server = createServer(handler);
    let connections = 0;
    server.on("connection", () => connections++);
    await new Promise<void>((ok) => server.listen(0, "127.0.0.1", ok));
    const addr = server.address();
    return {
      endpoint: `127.0.0.1:${typeof addr === "object" && addr ? addr.port : 0}`,
      connections: () => connections,
      close: () => {
        server.closeAllConnections();
        return new Promise<void>((ok) => server.close(() => ok()));
      },
    };
  };

  it("delivers the body with the routing and token headers, and sends sequential commands over one connection", async () => {
    const seen: { routing?: string; token?: string; body: string }[] = [];
    const s = await serve((req, res) => {
      let body = "";
      req.on("data", (c: Buffer) => (body += c.toString()));
      req.on("end", () => {
        const h = (n: string) => req.headers[n] as string | undefined;
        seen.push({ routing: h(ROUTING_HEADER), token: h(TOKEN_HEADER), body });
        res.writeHead(200, { "content-type": "application/json" }).end(answer("rt-target"));
      });
    });
    try {
      for (let k = 0; k < 3; k++) {
        const r = await sendCommand(s.endpoint, "http", probe, "token-token-token", 5000);
        expect(r).toMatchObject({ success: true, runtimeInstanceId: "rt-target" });
      }
      expect(seen).toHaveLength(3);
      expect(seen[0]).toEqual({ routing: "rt-target", token: "token-token-token", body: JSON.stringify(probe) });
      expect(s.connections()).toBe(1);
    } finally {
      await s.close();
    }
  });

  it("reports a runtime that never answers as runtime-unreachable with details.timeout, and a DispatchRun so as dispatch-timeout", async () => {
    const s = await serve(() => undefined);
    try {
      const t0 = Date.now();
      await expect(sendCommand(s.endpoint, "http", probe, "token-token-token", 300)).rejects.toMatchObject({
        code: "runtime-unreachable",
        details: { timeout: true },
      });
      expect(Date.now() - t0).toBeGreaterThanOrEqual(290);
      const dispatch = { ...probe, operation: "DispatchRun" } as RuntimeCommand;
      await expect(sendCommand(s.endpoint, "http", dispatch, "token-token-token", 300)).rejects.toMatchObject({
        code: "dispatch-timeout",
      });
    } finally {
      await s.close();
    }
  });

  it("reports an answer cut off mid-body as runtime-unreachable, not as a result", async () => {
    const s = await serve((_req, res) => {
      res.writeHead(200, { "content-type": "application/json", "content-length": "1000" });
      res.write(answer("rt-target").slice(0, 40));
      setTimeout(() => res.socket?.destroy(), 20);
    });
    try {
      await expect(sendCommand(s.endpoint, "http", probe, "token-token-token", 5000)).rejects.toMatchObject({
        code: "runtime-unreachable",
        details: { timeout: false },
      });
    } finally {
      await s.close();
    }
  });
});
