import type { sendUnaryData, Server, ServerUnaryCall } from "@grpc/grpc-js";
import { ROUTING_HEADER, TOKEN_HEADER } from "../../../contracts/index.ts";
import { RUNTIME_COMMAND_SERVICE } from "../../../platform/runtime-grpc-service.ts";
import type { CommandHandler } from "../shell/command-handler.ts";

const first = (v: (string | Buffer)[]): string | undefined => (v.length > 0 ? String(v[0]) : undefined);

/**
 * gRPC transport (h2c, insecure: TLS and routing belong to the gateway in front): one unary method
 * `ExecuteCommand` carrying the JSON envelope as bytes into the same handler as HTTP. Refusals are
 * in-band results (status OK), so both transports answer identically; only a handler crash maps to
 * INTERNAL. @grpc/grpc-js is loaded here, on the first gRPC start, not with the runtime's modules: its
 * load was ~40 ms of CPU (~13 % of a pooled member's boot, session 29) and most runtimes serve HTTP.
 */
export async function startGrpcServer(
  handler: CommandHandler,
  host: string,
  port: number,
): Promise<{ server: Server; port: number }> {
  const { Server, ServerCredentials, status } = await import("@grpc/grpc-js");
  const server = new Server({ "grpc.max_receive_message_length": 1024 * 1024 });
  server.addService(RUNTIME_COMMAND_SERVICE, {
    ExecuteCommand: (call: ServerUnaryCall<Buffer, Buffer>, callback: sendUnaryData<Buffer>) => {
      let body: unknown;
      try {
        body = JSON.parse(call.request.toString("utf8"));
      } catch {
        body = { unparseable: call.request.toString("utf8").slice(0, 200) };
      }
      handler({
        routingHeader: first(call.metadata.get(ROUTING_HEADER)),
        token: first(call.metadata.get(TOKEN_HEADER)),
        body,
      })
        .then((a) => callback(null, Buffer.from(JSON.stringify(a.result))))
        .catch((e: unknown) => callback({ code: status.INTERNAL, details: String((e as Error)?.message ?? e) }));
    },
  });
  const bound = await new Promise<number>((ok, fail) =>
    server.bindAsync(`${host}:${port}`, ServerCredentials.createInsecure(), (err, p) => (err ? fail(err) : ok(p))),
  );
  return { server, port: bound };
}
