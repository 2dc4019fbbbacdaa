import { Agent, request as httpRequest, type ClientRequest } from "node:http";
import { Client, credentials, Metadata, status as GrpcStatus } from "@grpc/grpc-js";
import {
  DroverError,
  ROUTING_HEADER,
  RuntimeCommandResult,
  TOKEN_HEADER,
  validate,
  type RuntimeCommand,
  type Transport,
} from "../contracts/index.ts";
import { EXECUTE_COMMAND_PATH, HTTP_COMMAND_PATH } from "./runtime-grpc-service.ts";

/** Headers of one raw command send; tests override them to prove refusals. */
export interface RawCommandHeaders {
  /** Routing header value; omitted when undefined. */
  readonly routing?: string;
  /** Instance token; omitted when undefined. */
  readonly token?: string;
}

const grpcClients = new Map<string, Client>();

/** `http://h:p` for HTTP; `h:p` for gRPC. Accepts either form for both transports. */
function address(endpoint: string, transport: Transport): string {
  const hostPort = endpoint.replace(/^[a-z]+:\/\//, "").replace(/\/+$/, "");
  return transport === "http" ? `http://${hostPort}` : hostPort;
}

/**
 * Sends any JSON body to a runtime's command endpoint and returns the parsed result envelope,
 * without checking who answered. Failure modes: `runtime-unreachable` (connection refused/reset,
 * timeout — details.timeout = true), `contract-violation` when the answer is not a result envelope.
 */
export async function sendRawCommand(
  endpoint: string,
  transport: Transport,
  body: unknown,
  headers: RawCommandHeaders,
  timeoutMs: number,
): Promise<RuntimeCommandResult> {
  const bytes = Buffer.from(JSON.stringify(body));
  const raw =
    transport === "http"
      ? await sendHttp(address(endpoint, transport), bytes, headers, timeoutMs)
      : await sendGrpc(address(endpoint, transport), bytes, headers, timeoutMs);
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw.toString("utf8"));
  } catch {
    throw new DroverError(
      "contract-violation",
      `runtime at ${endpoint} answered non-JSON: ${raw.toString("utf8").slice(0, 200)}`,
    );
  }
  return validate(RuntimeCommandResult, parsed, "runtime command result");
}

/**
 * Sends a runtime command with the routing header set to its target and the instance token, and
 * proves the responder: a result naming another RuntimeInstanceId raises
 * `runtime-identity-mismatch` (never treated as success, whatever it says). Refusals by the runtime
 * come back as results with `success: false` and a `failureReason`; transport failures raise
 * `runtime-unreachable` (or `dispatch-timeout` for a DispatchRun that timed out).
 */
export async function sendCommand(
  endpoint: string,
  transport: Transport,
  command: RuntimeCommand,
  token: string,
  timeoutMs: number,
): Promise<RuntimeCommandResult> {
  let result: RuntimeCommandResult;
  try {
    result = await sendRawCommand(
      endpoint,
      transport,
      command,
      { routing: command.runtimeInstanceId, token },
      timeoutMs,
    );
  } catch (e) {
    if (command.operation === "DispatchRun" && e instanceof DroverError && e.details.timeout === true) {
      throw new DroverError(
        "dispatch-timeout",
        `DispatchRun to ${command.runtimeInstanceId} timed out after ${timeoutMs} ms`,
        { cause: e },
      );
    }
    throw e;
  }
  if (result.runtimeInstanceId !== command.runtimeInstanceId) {
    throw new DroverError(
      "runtime-identity-mismatch",
      `expected=${command.runtimeInstanceId};actual=${result.runtimeInstanceId}`,
      {
        details: {
          expected: command.runtimeInstanceId,
          actual: result.runtimeInstanceId,
          hostIncarnation: result.hostIncarnation,
          endpoint,
        },
      },
    );
  }
  return result;
}

/** Closes the cached gRPC channels and HTTP connections (tests and process shutdown). */
export function closeRuntimeClients(): void {
  for (const c of grpcClients.values()) c.close();
  grpcClients.clear();
  httpAgent.destroy();
}

/**
 * One keep-alive pool for every runtime this process commands. node:http, not fetch: a dispatch is
 * one small POST, and undici's fetch (Request/Response objects, web streams, an AbortSignal timer)
 * cost admission ~1.5 ms of CPU per command in W2 where this costs ~0.4 (issue 15). Idle sockets
 * close after 4 s, well before a runtime's server drops them (Fastify: 72 s), so a reused socket is
 * never one the server is closing.
 */
const httpAgent = new Agent({ keepAlive: true, timeout: 4_000 });

function sendHttp(base: string, bytes: Buffer, h: RawCommandHeaders, timeoutMs: number): Promise<Buffer> {
  const headers: Record<string, string | number> = {
    "content-type": "application/json",
    "content-length": bytes.length,
  };
  if (h.routing !== undefined) headers[ROUTING_HEADER] = h.routing;
  if (h.token !== undefined) headers[TOKEN_HEADER] = h.token;
  const url = `${base}${HTTP_COMMAND_PATH}`;
  return new Promise<Buffer>((ok, fail) => {
    let timedOut = false;
    let req: ClientRequest | undefined;
    // The whole exchange is bounded, not the socket's idle time (as AbortSignal.timeout bounded fetch).
    const timer = setTimeout(() => {
      timedOut = true;
      req?.destroy(new Error(`no answer within ${timeoutMs} ms`));
    }, timeoutMs);
    const failWith = (e: unknown) => {
      clearTimeout(timer);
      fail(
        new DroverError(
          "runtime-unreachable",
          `POST ${url}: ${timedOut ? `no answer within ${timeoutMs} ms` : String(e)}`,
          { cause: e, details: { timeout: timedOut } },
        ),
      );
    };
    try {
      req = httpRequest(url, { method: "POST", headers, agent: httpAgent }, (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("error", failWith);
        res.on("close", () => {
          if (!res.complete) failWith(new Error("the connection closed before the whole answer"));
        });
        res.on("end", () => {
          clearTimeout(timer);
          ok(Buffer.concat(chunks));
        });
      });
    } catch (e) {
      return failWith(e); // an endpoint that is not a URL
    }
    req.on("error", failWith);
    req.end(bytes);
  });
}

function sendGrpc(hostPort: string, bytes: Buffer, h: RawCommandHeaders, timeoutMs: number): Promise<Buffer> {
  let client = grpcClients.get(hostPort);
  if (!client) {
    client = new Client(hostPort, credentials.createInsecure());
    grpcClients.set(hostPort, client);
  }
  const md = new Metadata();
  if (h.routing !== undefined) md.set(ROUTING_HEADER, h.routing);
  if (h.token !== undefined) md.set(TOKEN_HEADER, h.token);
  return new Promise((ok, fail) => {
    client.makeUnaryRequest(
      EXECUTE_COMMAND_PATH,
      (b: Buffer) => b,
      (b: Buffer) => b,
      bytes,
      md,
      { deadline: Date.now() + timeoutMs },
      (err, value) => {
        if (err || !value) {
          const timeout = err?.code === GrpcStatus.DEADLINE_EXCEEDED;
          fail(
            new DroverError(
              "runtime-unreachable",
              `gRPC ExecuteCommand at ${hostPort}: ${err?.details ?? "no response"}`,
              { cause: err, details: { timeout, grpcCode: err?.code } },
            ),
          );
        } else ok(value);
      },
    );
  });
}
