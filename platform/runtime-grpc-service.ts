import type { ServiceDefinition } from "@grpc/grpc-js";

/**
 * The runtime command service over gRPC: one service, one unary method, carrying the same JSON
 * envelope as the HTTP transport as raw bytes (no protobuf codegen: the envelope's zod schema is the
 * contract, and both transports must give identical results). Bytes pass through untouched so a
 * malformed body reaches the one command handler and is refused there with a structured reason,
 * exactly as over HTTP.
 */
export const RUNTIME_COMMAND_SERVICE_NAME = "drover.runtime.v1.RuntimeInstanceCommand";
export const EXECUTE_COMMAND_PATH = `/${RUNTIME_COMMAND_SERVICE_NAME}/ExecuteCommand`;

const identity = (b: Buffer): Buffer => b;

export const RUNTIME_COMMAND_SERVICE = {
  ExecuteCommand: {
    path: EXECUTE_COMMAND_PATH,
    requestStream: false,
    responseStream: false,
    requestSerialize: identity,
    requestDeserialize: identity,
    responseSerialize: identity,
    responseDeserialize: identity,
    originalName: "executeCommand",
  },
} satisfies ServiceDefinition;

/** HTTP path of the same command endpoint. */
export const HTTP_COMMAND_PATH = "/runtime-instance/commands";
