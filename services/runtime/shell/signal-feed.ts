import type { NatsConnection, Subscription } from "@nats-io/transport-node";
import type { DroverEvent } from "../../../contracts/index.ts";
import { runRef, type EventStore, type StreamLayout } from "../../../streams/index.ts";
import { unanswered, UNANSWERED_READ_DELAYS_MS, unansweredDelayMs } from "./unanswered-read.ts";

export type Signal = Extract<DroverEvent, { type: "run.signal-received" }>;
export type FoundSignal = { readonly seq: number; readonly event: Signal };

/** One wait listening for its run's signal of one name. */
export interface SignalWatch {
  /** Resolves with the first stored `signal-received` of the name, written by the API, stored after `watch` resolved. */
  readonly found: Promise<FoundSignal>;
  /** Stops listening (the tenant's feed stops with its last watch). */
  close(): void;
}

/** Where a runtime's wait steps learn of their runs' signals as they are stored (docs/control-flow.md "Waits"). */
export interface SignalFeeds {
  /** Resolves once every signal stored from now on for (tenant, run) will reach `found`. */
  watch(tenantId: string, sharedRunId: string, name: string): Promise<SignalWatch>;
}

/** The run's stored signals written by the API (the only writer its NATS rights allow), first first. */
export async function apiSignals(store: EventStore, tenantId: string, sharedRunId: string): Promise<FoundSignal[]> {
  const history = await store.read(runRef(tenantId, sharedRunId), { skipUndecodable: true });
  return history.events.flatMap((e) =>
    e.event.type === "run.signal-received" && e.event.writer.service === "api" ? [{ seq: e.seq, event: e.event }] : [],
  );
}

interface Waiter {
  readonly name: string;
  readonly ok: (s: FoundSignal) => void;
  readonly fail: (e: unknown) => void;
}

interface TenantFeed {
  readonly waiters: Map<string, Set<Waiter>>;
  /** Set right after the feed is made (its callback needs the feed). */
  sub?: Subscription;
  /** Set when the server refused or ended the subscription. */
  failure?: unknown;
  count: number;
}

/** After a hint, reads of the run this long apart until the hinted signal is read (a stream still storing it). */
const HINT_READS_MS = [0, 100, 400, 1500];

/**
 * One core NATS subscription per tenant with open waits on this runtime, on
 * `<events>.run.<tenant>.*.signal-received` (a subject its rights let it subscribe to, for its
 * tenants only: docs/nats-identities.md): the API's publish of a signal reaches it as the stream
 * stores it. The message is only a hint: the runtime then reads the run's history (through the
 * history responder) and hands the waits of that run the stored signal of their name, with its
 * stream sequence, so a publish the stream refused resolves nothing. A hint whose signal is not
 * read yet is read again (`HINT_READS_MS`); after a reconnect (hints may have been missed) every
 * listening run is read once. The feed stops with the tenant's last wait; a subscription the
 * server refuses fails the waits listening, whose step's retry then opens a new one.
 */
export function natsSignalFeeds(
  nc: NatsConnection,
  layout: StreamLayout,
  store: EventStore,
  log: (fields: Record<string, unknown>) => void,
  /** Delays after a read nobody answered (default UNANSWERED_READ_DELAYS_MS; tests shorten them). */
  unansweredDelaysMs: readonly number[] = UNANSWERED_READ_DELAYS_MS,
): SignalFeeds {
  const feeds = new Map<string, TenantFeed>();

  /** Reads the run and resolves its waits; true when every name in `names` was found. */
  const check = async (tenantId: string, feed: TenantFeed, runId: string, names?: ReadonlySet<string>) => {
    if (!feed.waiters.get(runId)?.size) return true;
    const stored = await apiSignals(store, tenantId, runId);
    for (const w of [...(feed.waiters.get(runId) ?? [])]) {
      const s = stored.find((x) => x.event.data.name === w.name);
      if (s) w.ok(s);
    }
    return [...(names ?? [])].every((n) => stored.some((x) => x.event.data.name === n));
  };

  // Reads answered without the signal are HINT_READS_MS apart and end with them; reads nobody
  // answered go on (unansweredDelaysMs apart) until one is answered or the run's waits end: the four
  // reads all unanswered (~17 s of a provisioner restart) lost the signal until the wait's deadline.
  const onHint = async (tenantId: string, feed: TenantFeed, runId: string, name: string | undefined) => {
    for (let i = 0, failed = 0; i < HINT_READS_MS.length;) {
      const wait = failed > 0 ? unansweredDelayMs(unansweredDelaysMs, failed) : HINT_READS_MS[i];
      if (wait) await new Promise((r) => setTimeout(r, wait));
      if (feeds.get(tenantId) !== feed) return;
      try {
        if (await check(tenantId, feed, runId, name === undefined ? undefined : new Set([name]))) return;
        [i, failed] = [i + 1, 0];
      } catch (e) {
        log({ event: "signal-read-failed", tenantId, sharedRunId: runId, detail: String((e as Error)?.message ?? e) });
        if (unanswered(e)) failed++;
        else [i, failed] = [i + 1, 0];
      }
    }
  };

  const start = (tenantId: string): TenantFeed => {
    const feed: TenantFeed = { waiters: new Map(), count: 0 };
    feed.sub = nc.subscribe(`${layout.eventPrefix}.run.${tenantId}.*.signal-received`, {
      callback: (err, m) => {
        if (err) return stopFeed(tenantId, feed, err);
        const runId = m.subject.split(".").at(-2) ?? "";
        if (!feed.waiters.has(runId)) return;
        let name: string | undefined;
        try {
          name = (m.json() as { data?: { name?: unknown } }).data?.name as string | undefined;
        } catch {
          return; // not an event: nothing the API wrote
        }
        if (typeof name !== "string") return void onHint(tenantId, feed, runId, undefined);
        // Only a name some wait of the run listens for is worth reading the run for.
        if ([...(feed.waiters.get(runId) ?? [])].some((w) => w.name === name)) void onHint(tenantId, feed, runId, name);
      },
    });
    return feed;
  };

  const stopFeed = (tenantId: string, feed: TenantFeed, why?: unknown) => {
    if (feeds.get(tenantId) === feed) feeds.delete(tenantId);
    if (why !== undefined) {
      feed.failure ??= why;
      log({ event: "signal-feed-failed", tenantId, detail: String((why as Error)?.message ?? why) });
      for (const set of feed.waiters.values()) for (const w of set) w.fail(why);
    }
    if (feed.sub && !feed.sub.isClosed()) feed.sub.unsubscribe();
  };

  // Hints published while the connection was down are lost: read every listening run once more.
  void (async () => {
    for await (const s of nc.status())
      if (s.type === "reconnect")
        for (const [tenantId, feed] of feeds)
          for (const runId of feed.waiters.keys()) void onHint(tenantId, feed, runId, undefined);
  })().catch(() => undefined);

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
      // The server has the subscription (or has refused it: its error comes before the flush's answer).
      await nc.flush().catch((e: unknown) => (f.failure ??= e));
      if (f.failure !== undefined) {
        close();
        throw f.failure;
      }
      return { found, close };
    },
  };
}
