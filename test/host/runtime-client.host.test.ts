import { createServer } from "node:http";
import { Server, ServerCredentials } from "@grpc/grpc-js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { RuntimeCommand, Transport } from "../../contracts/index.ts";
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
