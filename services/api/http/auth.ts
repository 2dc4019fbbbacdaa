import type { FastifyInstance, FastifyRequest } from "fastify";
import type { Credential } from "../../../contracts/index.ts";
import { authenticate, type TokenTable } from "../domain/access.ts";

// Request → credential, kept here rather than by augmenting FastifyRequest globally (other
// services share the fastify types).
const credentials = new WeakMap<FastifyRequest, Credential>();

/**
 * Adds authentication to every route of `scope`: the bearer token is resolved before the body is
 * even parsed, so an unauthenticated request learns nothing about its payload's validity.
 */
export function requireCredentials(scope: FastifyInstance, tokens: TokenTable): void {
  scope.addHook("onRequest", async (request) => {
    credentials.set(request, authenticate(tokens, request.headers.authorization));
  });
}

/** The credential of an authenticated request (throws if the route is outside {@link requireCredentials}: a wiring bug). */
export function credentialOf(request: FastifyRequest): Credential {
  const c = credentials.get(request);
  if (c === undefined)
    throw new Error(`route ${request.routeOptions.url ?? request.url} is not behind requireCredentials`);
  return c;
}
