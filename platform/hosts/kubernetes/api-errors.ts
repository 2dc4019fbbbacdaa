import { ApiException } from "@kubernetes/client-node";

/** The HTTP code and Kubernetes `Status.reason` of a failed API call, when it was one. */
export interface ApiFailure {
  readonly code: number;
  readonly reason: string;
  readonly message: string;
}

/**
 * Reads an `ApiException` from @kubernetes/client-node 1.x. For codes the OpenAPI spec does not
 * declare (409, most 404s) the body is the raw JSON string, so it is parsed here, once.
 * Returns undefined for anything that is not an API answer (network errors, bugs).
 */
export function apiFailure(e: unknown): ApiFailure | undefined {
  if (!(e instanceof ApiException)) return undefined;
  let body: unknown = e.body;
  if (typeof body === "string") {
    try {
      body = JSON.parse(body);
    } catch {
      body = undefined;
    }
  }
  const status = (body ?? {}) as { reason?: unknown; message?: unknown };
  return {
    code: e.code,
    reason: typeof status.reason === "string" ? status.reason : "",
    message: typeof status.message === "string" ? status.message : String(e.message),
  };
}

/** True when the call failed with one of the given HTTP codes (e.g. 404, 409). */
export function isApiCode(e: unknown, ...codes: number[]): boolean {
  const f = apiFailure(e);
  return f !== undefined && codes.includes(f.code);
}
