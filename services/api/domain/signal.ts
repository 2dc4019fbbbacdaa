import { canonicalJson } from "../../../aggregates/step-inputs.ts";
import {
  DroverError,
  WAIT_LIMITS,
  mayResolve,
  payloadChecker,
  type Credential,
  type DagDefinition,
  type DroverEvent,
  type TenantId,
  type WaitParams,
} from "../../../contracts/index.ts";

/** The principal a signal records: the tenant, and the token's name when it has one. Never from the body. */
export const signalPrincipalOf = (c: Extract<Credential, { role: "tenant" }>): string =>
  c.name === undefined ? `tenant:${c.tenantId}` : `tenant:${c.tenantId}:token:${c.name}`;

/** Only a tenant's own tokens resolve its waits: an operator is no principal of the run's tenant. */
export function signallingTenant(c: Credential): Extract<Credential, { role: "tenant" }> {
  if (c.role !== "tenant")
    throw new DroverError("forbidden", "a wait is resolved with a token of the run's tenant, not an operator's");
  return c;
}

/** The wait named `name` in the run's DAG, or 404. */
export function waitOf(dag: DagDefinition, name: string, sharedRunId: string): { stepId: string; params: WaitParams } {
  for (const s of dag.steps) if (s.kind === "wait" && s.params.name === name) return { stepId: s.id, params: s.params };
  throw new DroverError("not-found", `run ${sharedRunId} has no wait named "${name}"`, {
    details: { sharedRunId, name },
  });
}

/**
 * The checks a signal passes before anything is written, in order: the credential may resolve the
 * wait (403 `forbidden`), the payload is at most 32 KiB and fits the wait's schema (400 `contract-violation`).
 */
export function checkSignal(
  wait: { params: WaitParams },
  who: Extract<Credential, { role: "tenant" }>,
  payload: unknown,
) {
  if (!mayResolve(wait.params.resolvers, who))
    throw new DroverError("forbidden", `this token may not resolve wait "${wait.params.name}"`, {
      details: { name: wait.params.name },
    });
  const size = new TextEncoder().encode(canonicalJson(payload)).length;
  if (size > WAIT_LIMITS.maxPayloadBytes)
    throw new DroverError(
      "contract-violation",
      `the payload is ${size} bytes, more than ${WAIT_LIMITS.maxPayloadBytes}`,
    );
  const checker = payloadChecker(wait.params.schema);
  const bad = checker.ok ? checker.check(payload) : checker.error;
  if (bad) throw new DroverError("contract-violation", `the payload does not fit wait "${wait.params.name}": ${bad}`);
}

export type SignalEvent = Extract<DroverEvent, { type: "run.signal-received" }>;

/** The run's signal of `name` (the first counts), with its stream sequence. */
export function signalOf(
  events: readonly { seq: number; event: DroverEvent }[],
  name: string,
): { seq: number; event: SignalEvent } | undefined {
  for (const e of events)
    if (e.event.type === "run.signal-received" && e.event.data.name === name) return { seq: e.seq, event: e.event };
  return undefined;
}

/** A second signal: the same signal id is the first one again (idempotent); anything else is 409. */
export function repeatOf(first: { seq: number; event: SignalEvent }, signalId: string | undefined, tenantId: TenantId) {
  if (signalId !== undefined && first.event.data.signalId === signalId) return first;
  throw new DroverError("wait-already-signalled", `wait "${first.event.data.name}" already has a signal`, {
    details: { tenantId, name: first.event.data.name, signalId: first.event.data.signalId ?? null },
  });
}
