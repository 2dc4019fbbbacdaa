import rateLimit from "@fastify/rate-limit";
import type { FastifyInstance, FastifyRequest } from "fastify";
import { DroverError, type Credential, type DroverConfig } from "../../../contracts/index.ts";
import { credentialOf } from "./auth.ts";

/** Whom a limit counts against: the credential the bearer token names (one per token in the configuration). */
export const limitKey = (c: Credential): string =>
  c.role === "tenant" ? `tenant:${c.tenantId}` : `operator:${c.name}`;

/**
 * Per-credential request rate limit on the scope (`@fastify/rate-limit`, in-memory, per API
 * process): at most `api.rateLimit.max` requests per `api.rateLimit.timeWindowMs`. Registered after
 * authentication, so it counts authenticated callers by credential. Over the limit: 429
 * `rate-limited` through the error handler, with `Retry-After` (seconds until the window frees).
 */
export async function rateLimitByCredential(scope: FastifyInstance, config: DroverConfig): Promise<void> {
  await scope.register(rateLimit, {
    max: config.api.rateLimit.max,
    timeWindow: config.api.rateLimit.timeWindowMs,
    keyGenerator: (request: FastifyRequest) => limitKey(credentialOf(request)),
    errorResponseBuilder: (_request, ctx) =>
      new DroverError("rate-limited", `more than ${ctx.max} requests in ${ctx.after}; retry later`, {
        details: { max: ctx.max, retryAfterSeconds: Math.max(1, Math.ceil(ctx.ttl / 1000)) },
      }),
  });
}

/** Live event feeds per credential: a slot is taken before a feed starts and given back when it ends. */
export interface FeedSlots {
  /** Takes a slot for the request's credential; throws `too-many-event-feeds` when it has none left. Returns the release. */
  acquire(request: FastifyRequest): () => void;
}

export function feedSlots(max: number): FeedSlots {
  const open = new Map<string, number>();
  return {
    acquire(request) {
      const key = limitKey(credentialOf(request));
      const n = open.get(key) ?? 0;
      if (n >= max)
        throw new DroverError(
          "too-many-event-feeds",
          `${n} event feeds are open for this credential, the limit is ${max}`,
          {
            details: { open: n, max },
          },
        );
      open.set(key, n + 1);
      let released = false;
      return () => {
        if (released) return;
        released = true;
        const left = (open.get(key) ?? 1) - 1;
        if (left <= 0) open.delete(key);
        else open.set(key, left);
      };
    },
  };
}
