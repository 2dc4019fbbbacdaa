import { DeliverPolicy, type ConsumerMessages, type JetStreamClient } from "@nats-io/jetstream";
import type { DroverEvent } from "../../../contracts/index.ts";
import { LIVE_CONSUME, type StoredEvent, type StreamLayout } from "../../../streams/index.ts";
import { toStoredEvent } from "../../../streams/stored.ts";

export type Signal = Extract<DroverEvent, { type: "run.signal-received" }>;
export type FoundSignal = { readonly seq: number; readonly event: Signal };

/** One wait listening for its run's signal of one name. */
export interface SignalWatch {
  /** Resolves with the first stored `signal-received` of the name, written by the API, delivered after `watch` resolved. */
  readonly found: Promise<FoundSignal>;
  /** Stops listening (the tenant's feed stops with its last watch). */
  close(): void;
}

/** Where a runtime's wait steps learn of their runs' signals as they are stored (docs/control-flow.md "Waits"). */
export interface SignalFeeds {
  /** Resolves once every signal stored from now on for (tenant, run) will reach `found`. */
  watch(tenantId: string, sharedRunId: string, name: string): Promise<SignalWatch>;
}

interface Waiter {
  readonly name: string;
  readonly ok: (s: FoundSignal) => void;
  readonly fail: (e: unknown) => void;
}

interface TenantFeed {
  readonly waiters: Map<string, Set<Waiter>>;
  readonly ready: Promise<ConsumerMessages>;
  count: number;
}

/**
 * One ordered consumer per tenant with open waits on this runtime, filtered (in the create subject,
 * as its NATS rights require: docs/nats-identities.md) to `<events>.run.<tenant>.*.signal-received`
 * and starting after the stream's last sequence as of its creation; it delivers each signal of the
 * tenant's runs as it is stored, and the runtime hands it to the waits of that run. Nothing is read
 * while no signal comes but the consumer's idle heartbeat (every 2.5 s, per tenant, not per wait).
 * The feed stops with the tenant's last wait; a feed that fails (its consumer cannot be made again)
 * fails the waits listening, whose step's retry then opens a new one.
 */
export function natsSignalFeeds(
  js: JetStreamClient,
  layout: StreamLayout,
  log: (fields: Record<string, unknown>) => void,
): SignalFeeds {
  const feeds = new Map<string, TenantFeed>();

  const start = (tenantId: string): TenantFeed => {
    const waiters = new Map<string, Set<Waiter>>();
    const ready = (async () => {
      const jsm = await js.jetstreamManager();
      const last = (await jsm.streams.info(layout.eventStream)).state.last_seq;
      const oc = await js.consumers.get(layout.eventStream, {
        filter_subjects: `${layout.eventPrefix}.run.${tenantId}.*.signal-received`, // in the create subject
        deliver_policy: DeliverPolicy.StartSequence,
        opt_start_seq: last + 1,
      });
      return oc.consume({ max_messages: 64, ...LIVE_CONSUME });
    })();
    const feed: TenantFeed = { waiters, ready, count: 0 };
    void ready.then(
      async (messages) => {
        try {
          for await (const m of messages) deliver(waiters, m);
        } catch (e) {
          stopFeed(tenantId, feed, e);
        }
        if (feeds.get(tenantId) === feed) stopFeed(tenantId, feed, new Error("the signal feed ended"));
      },
      (e: unknown) => stopFeed(tenantId, feed, e),
    );
    return feed;
  };

  const deliver = (waiters: Map<string, Set<Waiter>>, m: Parameters<typeof toStoredEvent>[0]) => {
    const runId = m.subject.split(".").at(-2) ?? "";
    const listening = waiters.get(runId);
    if (!listening) return;
    let e: StoredEvent;
    try {
      e = toStoredEvent(m);
    } catch {
      return; // undecodable: not a signal the API wrote
    }
    if (e.event.type !== "run.signal-received" || e.event.writer.service !== "api") return;
    for (const w of listening) if (w.name === e.event.data.name) w.ok({ seq: e.seq, event: e.event });
  };

  const stopFeed = (tenantId: string, feed: TenantFeed, why?: unknown) => {
    if (feeds.get(tenantId) === feed) feeds.delete(tenantId);
    if (why !== undefined) {
      log({ event: "signal-feed-failed", tenantId, detail: String((why as Error)?.message ?? why) });
      for (const set of feed.waiters.values()) for (const w of set) w.fail(why);
    }
    void feed.ready.then((m) => m.close()).catch(() => undefined);
  };

  return {
    async watch(tenantId, sharedRunId, name) {
      let feed = feeds.get(tenantId);
      if (!feed) feeds.set(tenantId, (feed = start(tenantId)));
      const f = feed;
      f.count++;
      let waiter!: Waiter;
      const found = new Promise<FoundSignal>((ok, fail) => {
        waiter = { name, ok, fail };
      });
      found.catch(() => undefined);
      const set = f.waiters.get(sharedRunId) ?? new Set<Waiter>();
      f.waiters.set(sharedRunId, set.add(waiter));
      let closed = false;
      const close = () => {
        if (closed) return;
        closed = true;
        set.delete(waiter);
        if (set.size === 0 && f.waiters.get(sharedRunId) === set) f.waiters.delete(sharedRunId);
        if (--f.count === 0) stopFeed(tenantId, f);
      };
      try {
        await f.ready;
      } catch (e) {
        close();
        throw e;
      }
      return { found, close };
    },
  };
}
