import { createHash, randomBytes } from "node:crypto";

/** Mints one fresh subject-safe id token (lowercase [a-z0-9-], at most 40 characters). Injected so tests are deterministic. */
export type IdGenerator = () => string;

// 200 ids per `randomBytes` call (a synchronous OpenSSL call each: ~4% of the API's thread in W2,
// two per submission), as admission's envelope ids (platform/envelope.ts).
const ID_BYTES = 20;
const POOL = 200 * ID_BYTES;
let pool = Buffer.alloc(0);
let at = POOL;

/** 20 random bytes as hex: 160 bits, collision-free in practice, subject-safe. */
export const randomIdGenerator: IdGenerator = () => {
  if (at + ID_BYTES > pool.length) {
    pool = randomBytes(POOL);
    at = 0;
  }
  at += ID_BYTES;
  return pool.toString("hex", at - ID_BYTES, at);
};

/** The ids of one submission: the run and its `submitted` event. */
export interface SubmissionIds {
  readonly sharedRunId: string;
  readonly eventId: string;
}

/**
 * SharedRunId and EventId of a submission. With an idempotency key both are derived from
 * sha256(tenant, key), so every retry of the same submission names the same run and the same
 * event (the event store then sees the same decision, not a rival one); the tenant is part of the
 * digest, so two tenants using the same key never meet. Without a key both come from `newId`.
 * `run-` + 59 hex digits is 63 characters, the id limit.
 */
export function submissionIds(tenantId: string, idempotencyKey: string | undefined, newId: IdGenerator): SubmissionIds {
  if (idempotencyKey === undefined) return { sharedRunId: `run-${newId()}`, eventId: `ev-${newId()}` };
  // Length-prefixing the tenant keeps (tenant, key) pairs unambiguous whatever characters the key holds.
  const hex = createHash("sha256").update(`${tenantId.length}:${tenantId}:${idempotencyKey}`).digest("hex");
  return { sharedRunId: `run-${hex.slice(0, 59)}`, eventId: `ev-${hex.slice(0, 59)}` };
}
