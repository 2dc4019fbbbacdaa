import {
  jetstream,
  jetstreamManager,
  type JetStreamClient,
  type JetStreamManager,
  type JetStreamOptions,
} from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { contractViolation, encodeEvent, type DroverEvent, type EventType } from "../contracts/index.ts";
import { connectionOf, type NatsHandle } from "./connection.ts";
import type { StreamLayout } from "./layout.ts";
import { immediatePublish, publishGate, type PublishGate } from "./publish-gate.ts";
import { ackedPublisher, type AckedPublish } from "./acked-publish.ts";
import { directReader, scopedReader, type Reader } from "./scoped-read.ts";
import { aggregateSubject, eventSubject, type AggregateRef } from "./subjects.ts";

export interface EventStoreOptions {
  /** Timeout of each publish/request in ms (default 5000, the client's default). */
  readonly timeoutMs?: number;
  /** JetStream options (domain, API prefix) when `handle` is a bare connection. */
  readonly jetStream?: JetStreamOptions;
  /**
   * Read only through requests whose subject names what is read (scoped-read.ts), never a get
   * whose filter or sequence is in the body, and no consumer: a connection whose permissions limit
   * reads by subject (a runtime's) can then read exactly what they allow. Reads exec and run
   * aggregates only, through the history responder (history-responder.ts), which must be running.
   * Default: batched Direct Gets.
   */
  readonly subjectScopedReads?: boolean;
  /**
   * Hold each append's first publish to the event loop's check phase and send those held together
   * (publish-gate.ts): fewer, larger socket writes when many aggregates append at once (a runtime's
   * executions). Each append is still a separate conditional publish awaiting its own ack.
   */
  readonly coalescePublishes?: boolean;
}

/** What every event-store operation shares: connection, JetStream client and manager, layout. */
export interface StoreContext {
  readonly nc: NatsConnection;
  readonly js: JetStreamClient;
  readonly jsm: Promise<JetStreamManager>;
  readonly layout: StreamLayout;
  readonly timeoutMs: number;
  /** How the event stream is read (scoped-read.ts). */
  readonly reader: Reader;
  /** How an append's publish is sent (publish-gate.ts). */
  readonly gate: PublishGate;
  /** A conditional publish awaiting its ack (acked-publish.ts). */
  readonly publish: AckedPublish;
}

export function storeContext(handle: NatsHandle, layout: StreamLayout, opts: EventStoreOptions = {}): StoreContext {
  const nc = connectionOf(handle);
  const given = handle as Partial<JetStreamClient>;
  const js =
    typeof given.publish === "function" && typeof given.startBatch === "function"
      ? (handle as JetStreamClient)
      : jetstream(nc, opts.jetStream);
  // checkAPI: false — no round trip here; the first real request reports an unreachable server.
  const jsm = jetstreamManager(nc, { ...js.getOptions(), checkAPI: false });
  jsm.catch(() => undefined); // surfaced by the first await, not as an unhandled rejection
  const timeoutMs = opts.timeoutMs ?? 5000;
  const reader = opts.subjectScopedReads
    ? scopedReader(nc, jsm, layout, timeoutMs)
    : directReader(jsm, layout.eventStream);
  const gate = opts.coalescePublishes ? publishGate() : immediatePublish;
  return { nc, js, jsm, layout, timeoutMs, reader, gate, publish: ackedPublisher(nc) };
}

/** An event ready to publish: its subject and validated bytes. */
export interface Encoded {
  readonly subject: string;
  readonly data: Uint8Array;
  readonly eventId: string;
}

/**
 * Validates `event` for `ref` before any byte is sent: its schema (contract-violation otherwise),
 * that its type belongs to the aggregate, and that a tenant-scoped event names exactly the
 * aggregate's tenant (the tenant is the only authorization boundary; a mismatch is a bug, never stored).
 */
export function encodeFor(layout: StreamLayout, ref: AggregateRef, event: DroverEvent): Encoded {
  const data = encodeEvent(event);
  const at = { subject: aggregateSubject(layout, ref) };
  if (!event.type.startsWith(`${ref.aggregate}.`))
    throw contractViolation(`event ${event.type}`, `does not belong to a ${ref.aggregate} aggregate`, at);
  if ("tenantId" in ref && event.tenantId !== ref.tenantId) {
    throw contractViolation(
      `event ${event.type}`,
      `tenantId ${event.tenantId} does not match the aggregate's tenant ${ref.tenantId}`,
      at,
    );
  }
  return { subject: eventSubject(layout, ref, event.type as EventType), data, eventId: event.eventId };
}
