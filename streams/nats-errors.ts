import { JetStreamApiError } from "@nats-io/jetstream";
import { JetStreamStatusError } from "@nats-io/jetstream/internal";
import {
  ClosedConnectionError,
  DrainingConnectionError,
  NoRespondersError,
  RequestError,
  TimeoutError,
} from "@nats-io/transport-node";
import { DroverError, isDroverError } from "../contracts/index.ts";

/** JetStream API error codes drover reacts to (nats-server jetstream_errors_generated.go). */
export const JS = {
  /** `wrong last sequence: N` — an expected (subject) sequence is stale. */
  wrongLastSequence: 10071,
  /** `wrong last sequence` (no number) — e.g. an expectation on a subject already written in the same batch. */
  wrongLastSequenceConstant: 10164,
  /** A clustered stream's leader holds a write with this msg id in flight (not yet applied): retry shortly. */
  msgIdInProcess: 10158,
  /** An atomic batch carries a msg id the stream already holds (a retried, already committed batch). */
  batchDuplicateMsgId: 10201,
  batchIncomplete: 10176,
  atomicDisabled: 10174,
  batchTooManyInflight: 10210,
  streamNotFound: 10059,
  /** `no suitable peers for placement` (with the reasons, e.g. `peer offline`): a replicated stream or consumer cannot be placed. */
  clusterNoPeers: 10005,
} as const;

export function jsCode(e: unknown): number | undefined {
  return e instanceof JetStreamApiError ? e.code : undefined;
}

/** True for failures where the server may not have answered: the write may or may not be stored. */
export function isTransportFailure(e: unknown): boolean {
  return (
    e instanceof TimeoutError ||
    e instanceof NoRespondersError ||
    e instanceof ClosedConnectionError ||
    e instanceof DrainingConnectionError ||
    (e instanceof Error && e.name === "JetStreamNotEnabled") ||
    (e instanceof RequestError && (e.isNoResponders() || e.cause instanceof TimeoutError))
  );
}

/**
 * True when JetStream did not answer, or answered "temporarily unavailable" (10008: a cluster with no
 * meta or stream leader yet, e.g. electing one after a node died), or could not place a replicated
 * asset because a peer is `offline` to the meta leader (10005): a freshly started node counts as
 * offline for placement until the leader has its first statsz (config and stats), even while the
 * meta group already reports it current (nats-server `nodeInfo.selectable`). Worth trying again later.
 */
export function isJetStreamUnavailable(e: unknown): boolean {
  return isTransportFailure(e) || jsCode(e) === 10008 || isPeerOffline(e);
}

function isPeerOffline(e: unknown): boolean {
  return jsCode(e) === JS.clusterNoPeers && /peer offline/.test((e as Error).message);
}

/**
 * Maps a failure of a JetStream call to drover's catalogue. No answer → `event-store-unavailable`
 * (retryable; retry with the same msg id). Any other JetStream API refusal → `event-store-unavailable`
 * marked non-retryable with the server's code and description, because retrying the same request
 * will be refused the same way. DroverErrors pass through.
 */
export function toStoreError(e: unknown, what: string, details: Record<string, unknown> = {}): DroverError {
  if (isDroverError(e)) return e;
  if (isTransportFailure(e)) {
    return new DroverError("event-store-unavailable", `${what}: JetStream did not answer (${(e as Error).message})`, {
      cause: e,
      details,
    });
  }
  if (e instanceof JetStreamApiError) {
    return new DroverError(
      "event-store-unavailable",
      `${what}: JetStream refused the request: ${e.message} (code ${e.code})`,
      { cause: e, retryable: false, details: { ...details, jsCode: e.code } },
    );
  }
  // Unknown errors are infrastructure faults until proven otherwise (conventions.md "Errors").
  return new DroverError("event-store-unavailable", `${what}: ${(e as Error)?.message ?? String(e)}`, {
    cause: e,
    details,
  });
}

/** A direct get found nothing (404): not an error for reads, the answer is "no such message". */
export function isNotFound(e: unknown): boolean {
  return e instanceof JetStreamStatusError && e.code === 404;
}
