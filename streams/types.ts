import type { DroverEvent, EventType } from "../contracts/index.ts";
import type { AggregateRef } from "./subjects.ts";

/** An event as stored: its stream sequence is its position in the one total order. */
export interface StoredEvent<E extends DroverEvent = DroverEvent> {
  readonly seq: number;
  readonly subject: string;
  /** Server receive time of the message. */
  readonly time: Date;
  readonly event: E;
}

/** Result of an acknowledged append. `duplicate` is true when the msg id was already stored (idempotent retry). */
export interface Appended {
  readonly seq: number;
  readonly duplicate: boolean;
}

export interface AppendOptions {
  /** Stream sequence of the aggregate's last event as read (0 = the aggregate must not exist yet). */
  readonly expectedSeq: number;
  /** Deterministic id of the decision; defaults to `<aggregate subject>:<expectedSeq>`. */
  readonly msgId?: string;
}

/** One aggregate's part of an atomic multi-aggregate transition. */
export interface BatchEntry {
  readonly ref: AggregateRef;
  readonly expectedSeq: number;
  readonly events: readonly DroverEvent[];
}

/** An aggregate's stored history and the sequence to expect on the next append. */
export interface AggregateHistory {
  readonly events: readonly StoredEvent[];
  /** 0 when the aggregate has no events. */
  readonly lastSeq: number;
  /** With `skipUndecodable`: the messages left out of `events` because they do not decode (else the read fails). */
  readonly undecodable?: readonly Undecodable[];
}

/** A stored message that is not a valid drover event (e.g. a trusted producer's invalid `submitted`). */
export interface Undecodable {
  readonly seq: number;
  readonly subject: string;
  readonly error: string;
}

/** Where replay starts: a stream sequence (inclusive) or a time. */
export type ReplayFrom = { readonly seq: number } | { readonly time: Date };

/**
 * The event store over JetStream (identities-and-events.md "Appending"). Every append is validated
 * by the event's zod schema before a byte is sent, is conditional on the aggregate's expected
 * sequence (scoped to the aggregate wildcard) and carries a deterministic `Nats-Msg-Id`.
 *
 * Failure modes: a stale expectation rejects with `DroverError` code `version-conflict`
 * (details: subject, expectedSeq); an invalid event with `contract-violation` (nothing sent); no
 * answer with `event-store-unavailable` (retry with the same msg id is safe inside the duplicate window).
 */
export interface EventStore {
  append(ref: AggregateRef, event: DroverEvent, opts: AppendOptions): Promise<Appended>;
  /** Appends events to one aggregate in order, each conditional on the previous; stops at the first failure. */
  appendAll(ref: AggregateRef, events: readonly DroverEvent[], opts: AppendOptions): Promise<Appended[]>;
  /** One JetStream atomic batch: every entry's expectation holds and all events are stored, or nothing is. */
  appendAtomic(entries: readonly BatchEntry[]): Promise<Appended[]>;
  /**
   * The aggregate's full history in stream order. An undecodable message fails the read with
   * `contract-violation`, or with `skipUndecodable` is left out and listed in `undecodable`.
   * `withoutPayload`: a `run.submitted`'s DAG and input are not validated (contracts
   * `decodeEventWithoutPayload`), for a reader that uses neither; every other field and event is.
   * `atLeastSeq`: the caller knows the aggregate holds a message at that sequence (one it was
   * delivered): a replica that has not applied it yet is not the answer; the read goes on as after
   * this store's own append (read-floor.ts). The history may still end before it (no leader to
   * ask): the caller checks `lastSeq`.
   */
  read(
    ref: AggregateRef,
    opts?: { readonly skipUndecodable?: boolean; readonly withoutPayload?: boolean; readonly atLeastSeq?: number },
  ): Promise<AggregateHistory>;
  /** Sequence of the aggregate's last event (0 when none) without reading its history. */
  lastSeq(ref: AggregateRef): Promise<number>;
  /**
   * The aggregate's last event of `type` (undefined when none), one get of its subject without
   * reading the history. On a replicated stream it may come from a lagging replica: an older one.
   */
  lastOfType(ref: AggregateRef, type: EventType): Promise<StoredEvent | undefined>;
  /** Ordered replay of the event stream (optionally filtered) until the end as of the call; returns the last sequence seen. */
  replay(
    from: ReplayFrom,
    onEvent: (e: StoredEvent) => void | Promise<void>,
    opts?: {
      filter?: string | string[];
      /** Takes a message that does not decode instead of failing the replay (which then goes on past it). */
      onUndecodable?: (u: Undecodable) => void | Promise<void>;
    },
  ): Promise<number>;
}
