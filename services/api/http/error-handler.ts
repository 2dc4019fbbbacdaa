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
  };
}

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
  if (isDroverError(err)) {
    if (err.code === "unauthenticated") void reply.header("www-authenticate", "Bearer");
    const status = ERROR_CATALOGUE[err.code].httpStatus;
    if (status >= 500) request.log.warn({ err }, "request failed");
    return reply.code(status).send(body(err.code, err.message, err.retryable, { ...err.details }));
  }
  if (hasZodFastifySchemaValidationErrors(err)) {
    const where = err.validationContext ?? "request";
    const issues = err.validation.map(
      (v) => `${where}${v.instancePath === "/" ? "" : v.instancePath.replaceAll("/", ".")}: ${v.message}`,
    );
    const code = where === "params" ? "invalid-id" : "contract-violation";
    return reply
      .code(400)
      .send(body(code, `the ${where} is invalid: ${issues.slice(0, 3).join("; ")}`, false, { issues }));
  }
  const status = err.statusCode;
  if (!(err instanceof ResponseSerializationError) && typeof status === "number" && status >= 400 && status < 500) {
    return reply.code(status).send(body("contract-violation", err.message, false, { fastifyCode: err.code }));
  }
  request.log.error({ err }, "unexpected error");
  return reply.code(500).send(body("internal", "internal error; the server log has the details", true));
}
