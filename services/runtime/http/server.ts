import Fastify, { type FastifyInstance, type FastifyServerOptions } from "fastify";
import { serializerCompiler, validatorCompiler, type ZodTypeProvider } from "fastify-type-provider-zod";
import { z } from "zod";
import { ROUTING_HEADER, RuntimeCommandResult, TOKEN_HEADER } from "../../../contracts/index.ts";
import { HTTP_COMMAND_PATH } from "../../../platform/runtime-grpc-service.ts";
import type { CommandHandler } from "../shell/command-handler.ts";

/** Fastify's compiler factories for zod (its types expect ajv-shaped compilers; the routes use zod schemas). */
const zodCompilers = {
  buildValidator: () => validatorCompiler,
  buildSerializer: () => serializerCompiler,
} as unknown as NonNullable<NonNullable<FastifyServerOptions["schemaController"]>["compilersFactory"]>;

const header = (v: string | string[] | undefined): string | undefined => (Array.isArray(v) ? v[0] : v);

/** A command server built and not yet listening: `serve` sets its handler and binds it. */
export interface PreparedHttpServer {
  readonly server: FastifyInstance;
  serve(handler: CommandHandler, host: string, port: number): Promise<{ server: FastifyInstance; port: number }>;
}

/**
 * HTTP transport: `POST /runtime-instance/commands`. Thin on purpose: the body is passed as is to the
 * one command handler (so a malformed command is refused with the same structured result as over
 * gRPC, not with a framework-shaped 400); the response is serialized through the result schema and
 * the status comes from the error catalogue.
 */
export async function startHttpServer(
  handler: CommandHandler,
  host: string,
  port: number,
): Promise<{ server: FastifyInstance; port: number }> {
  return prepareHttpServer(handler).serve(handler, host, port);
}

/**
 * Builds the command server (Fastify, its route and compilers) without listening: a pooled runtime
 * does this before its binding (main.ts), off the bind's critical path. Until `serve`, commands reach
 * `unbound` (only in-process requests can: nothing listens); `serve` swaps in the real handler and
 * listens. Build once, serve once.
 */
export function prepareHttpServer(unbound: CommandHandler): PreparedHttpServer {
  let handler = unbound;
  const server = Fastify({
    logger: false,
    bodyLimit: 1024 * 1024,
    // The zod compilers are the only ones this server uses: named here, Fastify never loads its default
    // ones (ajv and fast-json-stringify), which were ~110 ms of module loading in every runtime's start,
    // a warm pool binding's included (profiled on the W3 bench).
    schemaController: { compilersFactory: zodCompilers },
  }).withTypeProvider<ZodTypeProvider>();
  server.setValidatorCompiler(validatorCompiler);
  server.setSerializerCompiler(serializerCompiler);
  // A body that is not JSON still reaches the handler (as a string) and gets its structured refusal.
  server.addContentTypeParser("application/json", { parseAs: "string" }, (_req, body, done) => {
    try {
      done(null, JSON.parse(body as string));
    } catch {
      done(null, { unparseable: String(body).slice(0, 200) });
    }
  });
  server.post(
    HTTP_COMMAND_PATH,
    {
      schema: { body: z.unknown(), response: { default: RuntimeCommandResult } },
    },
    async (req, reply) => {
      const answer = await handler({
        routingHeader: header(req.headers[ROUTING_HEADER]),
        token: header(req.headers[TOKEN_HEADER]),
        body: req.body,
      });
      return reply.code(answer.httpStatus).send(answer.result);
    },
  );
  return {
    server,
    async serve(h, host, port) {
      handler = h;
      await server.listen({ host, port });
      const addr = server.server.address();
      return { server, port: typeof addr === "object" && addr ? addr.port : port };
    },
  };
}
