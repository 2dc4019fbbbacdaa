import { assertNever } from "../contracts/assert-never.ts";
import {
  AckPolicy,
  DeliverPolicy,
  JetStreamApiError,
  ReplayPolicy,
  type ConsumerConfig,
  type ConsumerInfo,
  type ConsumerMessages,
  type JetStreamManager,
  type JsMsg,
} from "@nats-io/jetstream";
import { nanos } from "@nats-io/transport-node";
import { DroverError } from "../contracts/index.ts";
import type { NatsHandle } from "./connection.ts";
import { DEFAULT_BACKOFF_MS, LIVE_CONSUME, outcomeOf, type Outcome } from "./consumer-outcome.ts";
import type { StreamLayout } from "./layout.ts";
import { storeContext, type EventStoreOptions } from "./store-context.ts";
import { toStoredEvent } from "./stored.ts";
import type { StoredEvent } from "./types.ts";

/** A durable consumer of the event stream, defined as code and created once per deployment. */
export interface DurableConsumerSpec {
  readonly name: string;
  readonly filter: string | readonly string[];
  /** Deliveries before the server gives up and the dead-letter stream records it (default 5). */
  readonly maxDeliver?: number;
  /** Time the server waits for an ack before redelivering (default 30 s; `working()` extends it). */
  readonly ackWaitMs?: number;
  /** Start with events appended after creation instead of the whole stream. */
  readonly deliverNew?: boolean;
  readonly maxAckPending?: number;
}

export function durableConsumerConfig(spec: DurableConsumerSpec): Partial<ConsumerConfig> {
  const filters = typeof spec.filter === "string" ? [spec.filter] : [...spec.filter];
  return {
    durable_name: spec.name,
    ack_policy: AckPolicy.Explicit,
    ack_wait: nanos(spec.ackWaitMs ?? 30_000),
    max_deliver: spec.maxDeliver ?? 5,
    max_ack_pending: spec.maxAckPending ?? 1000,
    deliver_policy: spec.deliverNew ? DeliverPolicy.New : DeliverPolicy.All,
    replay_policy: ReplayPolicy.Instant,
    ...(filters.length === 1 ? { filter_subject: filters[0]! } : { filter_subjects: filters }),
  };
}

const CONSUMER_EXISTS_DIFFERENT = 10148;

/**
 * Creates the durable consumer, or accepts an identical existing one (consumer-create `action:
 * create`, nats-server >= 2.10). A consumer of that name with a different config is refused with
 * `contract-violation` rather than silently updated: changing delivery semantics under a running
 * service must be a deliberate `jsm.consumers.update`.
 */
export async function ensureConsumer(
  jsm: JetStreamManager,
  layout: StreamLayout,
  spec: DurableConsumerSpec,
): Promise<ConsumerInfo> {
  try {
    return await jsm.consumers.add(layout.eventStream, durableConsumerConfig(spec));
  } catch (e) {
    if (e instanceof JetStreamApiError && e.code === CONSUMER_EXISTS_DIFFERENT) {
      throw new DroverError(
        "contract-violation",
        `consumer ${spec.name} on ${layout.eventStream} exists with a different configuration; ` +
          "refusing to change it implicitly (update it deliberately or choose a new name)",
        { cause: e, details: { consumer: spec.name } },
      );
    }
    throw e;
  }
}

export interface DeliveryContext {
  /** 1 on first delivery. */
  readonly deliveryCount: number;
  /** Tells the server the handler is still working (resets the ack timer). Called automatically too. */
  working(): void;
}
export type EventHandler = (e: StoredEvent, ctx: DeliveryContext) => Promise<void>;

export interface ConsumerRunnerOptions extends EventStoreOptions {
  readonly backoffMs?: readonly number[];
  /** Messages buffered client-side (default `concurrency`: buffered messages age against ack_wait too). */
  readonly prefetch?: number;
  /**
   * Handlers run at once over the one pull subscription (default 1: one message at a time). One
   * runner of N, not N runners of 1: with 132 runners of one durable (the provisioner), some events
   * reached a handler only seconds after they were stored while most runners sat idle (an event
   * given to the pull of a busy runner waits for its handler to end; test/int/consumer-runner.int.test.ts).
   */
  readonly concurrency?: number;
  /** Interval of automatic `working()` while a handler runs (default ack_wait / 3). */
  readonly workingEveryMs?: number;
  /** Observes each settled delivery (metrics, logs, tests). */
  readonly onOutcome?: (o: {
    readonly seq: number;
    readonly deliveryCount: number;
    readonly outcome: Outcome;
    readonly error?: unknown;
  }) => void;
}

export interface ConsumerRunner {
  /** Stops pulling, lets the in-flight handler finish and settle its message, then resolves. */
  stop(): Promise<void>;
  /** Settles when the runner ends: resolves after stop, rejects if the subscription fails. */
  readonly done: Promise<void>;
}

/**
 * Runs `handler` over the durable consumer `spec.name` (which must exist: see ensureConsumer),
 * up to `concurrency` messages at a time (default one), mapping each outcome to ack / nak(backoff) / term via `outcomeOf`.
 * An event that does not decode is termed as a contract violation (recorded in the dead-letter
 * stream with its sequence), never skipped silently. Handlers must be idempotent: redelivery after
 * a crash or an expired ack wait is normal.
 */
export async function runConsumer(
  handle: NatsHandle,
  layout: StreamLayout,
  spec: DurableConsumerSpec,
  handler: EventHandler,
  opts: ConsumerRunnerOptions = {},
): Promise<ConsumerRunner> {
  const ctx = storeContext(handle, layout, opts);
  const consumer = await ctx.js.consumers.get(layout.eventStream, spec.name);
  const policy = { maxDeliver: spec.maxDeliver ?? 5, backoffMs: opts.backoffMs ?? DEFAULT_BACKOFF_MS };
  const workingEvery = opts.workingEveryMs ?? Math.max(100, Math.floor((spec.ackWaitMs ?? 30_000) / 3));
  const concurrency = Math.max(1, opts.concurrency ?? 1);
  const messages: ConsumerMessages = await consumer.consume({
    max_messages: opts.prefetch ?? concurrency,
    ...LIVE_CONSUME,
  });

  async function handle1(m: JsMsg): Promise<void> {
    const deliveryCount = m.info.deliveryCount;
    let failure: { error: unknown } | undefined;
    const timer = setInterval(() => m.working(), workingEvery);
    try {
      await handler(toStoredEvent(m), { deliveryCount, working: () => m.working() });
    } catch (error) {
      failure = { error };
    } finally {
      clearInterval(timer);
    }
    const outcome = outcomeOf(failure, deliveryCount, policy);
    switch (outcome.kind) {
      // ackAck: "acked" means the server confirmed it, so stop() can promise no redelivery of handled work.
      case "ack":
        await m.ackAck().catch(() => undefined);
        break;
      case "nak":
        m.nak(outcome.delayMs);
        break;
      case "term":
        m.term(outcome.reason);
        break;
      default:
        assertNever(outcome, "outcome");
    }
    opts.onOutcome?.({ seq: m.seq, deliveryCount, outcome, ...(failure ? { error: failure.error } : {}) });
  }

  // A message is handed to a handler as soon as one is free; the next is taken only then.
  const running = new Set<Promise<void>>();
  const done = (async () => {
    try {
      for await (const m of messages) {
        const p: Promise<void> = handle1(m)
          .catch(() => undefined) // each delivery is settled inside (ack, nak or term); nothing to add here
          .finally(() => running.delete(p));
        running.add(p);
        while (running.size >= concurrency) await Promise.race(running);
      }
    } finally {
      await Promise.all(running);
    }
  })();
  done.catch(() => undefined);
  return {
    async stop() {
      await messages.close();
      await done;
    },
    done,
  };
}
