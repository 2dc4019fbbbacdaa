import { DroverError, isDroverError } from "../../../contracts/index.ts";

/**
 * A failure inside the runtime's shell as a catalogued error: a DroverError stays as it is, anything
 * else is an infrastructure fault of the event store the runtime journals to (conventions.md
 * "Errors": unknown errors are retryable infrastructure faults), i.e. `event-store-unavailable`.
 */
export function storeFailureOf(e: unknown): DroverError {
  return isDroverError(e)
    ? e
    : new DroverError("event-store-unavailable", String((e as Error)?.message ?? e), { cause: e });
}
