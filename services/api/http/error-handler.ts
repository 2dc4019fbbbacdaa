import type { FastifyError, FastifyReply, FastifyRequest } from "fastify";
import { hasZodFastifySchemaValidationErrors, ResponseSerializationError } from "fastify-type-provider-zod";
import { ERROR_CATALOGUE, isDroverError, type ErrorCode } from "../../../contracts/index.ts";

/** The body of every error answer: a catalogued code (or `internal`), a message and structured details. */
export interface ErrorBody {
  readonly error: {
    readonly code: ErrorCode | "internal";
    readonly message: string;
    readonly retryable: boolean;
    readonly details: Readonly<Record<string, unknown>>;
    /** The answer's `x-request-id`: quote it when reporting a problem (the server log carries it). */
    readonly requestId?: string;
  };
}

/** Seconds a client should wait before retrying a 429 or 503. */
export const RETRY_AFTER_SECONDS = 1;

const body = (
  code: ErrorCode | "internal",
  message: string,
  retryable: boolean,
  details: Record<string, unknown> = {},
): ErrorBody => ({ error: { code, message, retryable, details } });

/**
 * The one place errors become HTTP answers (conventions.md "Errors").
 * - DroverError → the catalogue's status for its code, its message and details.
 * - Schema validation (zod via the type provider) → 400: `invalid-id` for path parameters,
 *   `contract-violation` otherwise, listing every issue.
 * - fastify's own client errors (malformed JSON, unsupported media type, body too large) → their
 *   4xx status as `contract-violation`.
 * - Anything else → 500 `internal`, logged with its stack, answered without any detail of it.
 */
export function errorHandler(err: FastifyError, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  const answer = answerFor(err, request, reply);
  // A limit that knows when it frees up says so (details.retryAfterSeconds); otherwise a short default.
  const after = isDroverError(err) ? err.details.retryAfterSeconds : undefined;
  if (answer.status === 429 || answer.status === 503)
    void reply.header("retry-after", String(typeof after === "number" ? after : RETRY_AFTER_SECONDS));
  return reply.code(answer.status).send({ error: { ...answer.body.error, requestId: request.id } });
}

function answerFor(
  err: FastifyError,
  request: FastifyRequest,
  reply: FastifyReply,
): { readonly status: number; readonly body: ErrorBody } {
  if (isDroverError(err)) {
    if (err.code === "unauthenticated") void reply.header("www-authenticate", "Bearer");
    const status = ERROR_CATALOGUE[err.code].httpStatus;
    if (status >= 500) request.log.warn({ err }, "request failed");
    return { status, body: body(err.code, err.message, err.retryable, { ...err.details }) };
  }
  if (hasZodFastifySchemaValidationErrors(err)) {
    const where = err.validationContext ?? "request";
    const issues = err.validation.map(
      (v) => `${where}${v.instancePath === "/" ? "" : v.instancePath.replaceAll("/", ".")}: ${v.message}`,
    );
    const code = where === "params" ? "invalid-id" : "contract-violation";
    return {
      status: 400,
      body: body(code, `the ${where} is invalid: ${issues.slice(0, 3).join("; ")}`, false, { issues }),
    };
  }
  const status = err.statusCode;
  if (!(err instanceof ResponseSerializationError) && typeof status === "number" && status >= 400 && status < 500) {
    return { status, body: body("contract-violation", err.message, false, { fastifyCode: err.code }) };
  }
  request.log.error({ err }, "unexpected error");
  return { status: 500, body: body("internal", "internal error; the server log has the details", true) };
}
