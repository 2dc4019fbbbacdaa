import { jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import { type NatsConnection } from "@nats-io/transport-node";
import { connectHarness } from "../../platform/nats-auth/server-keys.ts";
import { EventId, type EventOf, type EventType } from "../../contracts/index.ts";
import { ensureStreams } from "../../streams/ensure-streams.ts";
import { taggedLayout, type StreamLayout } from "../../streams/layout.ts";
import { exampleEvent } from "./example-events.ts";
import { uniqueName } from "./isolation.ts";

/** A connection to `url` and drover's streams under a fresh tagged layout: one isolated event store per test. */
export interface StreamsFixture {
  readonly nc: NatsConnection;
  readonly jsm: JetStreamManager;
  readonly layout: StreamLayout;
  close(): Promise<void>;
}

export async function freshStreams(url: string, tag = "st"): Promise<StreamsFixture> {
  const nc = await connectHarness({ servers: url });
  const jsm = await jetstreamManager(nc);
  const layout = taggedLayout(uniqueName(tag));
  await ensureStreams(jsm, layout);
  return {
    nc,
    jsm,
    layout,
    async close() {
      // deny_delete forbids deleting messages, not the stream: tests clean up what they created.
      for (const s of [layout.eventStream, layout.heartbeatStream, layout.deadLetterStream])
        await jsm.streams.delete(s).catch(() => undefined);
      await nc.close();
    },
  };
}

let counter = 0;
/** The catalogue's example event of `type` with a unique eventId (and optional overrides). */
export function event<T extends EventType>(type: T, patch: Partial<EventOf<T>> = {}): EventOf<T> {
  counter += 1;
  return { ...exampleEvent(type), eventId: EventId.parse(`ev-${process.pid}-${counter}`), ...patch };
}

/**
 * Resolves when `check` returns a value other than undefined, polling until `timeoutMs` (then rejects
 * naming `what`). Between checks it waits `everyMs` (default 25 ms), or twice what the last check
 * took when that is longer (at most 500 ms): a costly check (a whole event log read, a CLI run) then
 * takes at most a third of a core instead of spinning, which on 2 cores starved the services under
 * test; it is seen at most two check-durations late.
 */
export async function eventually<T>(
  what: string,
  check: () => Promise<T | undefined>,
  timeoutMs = 10_000,
  everyMs = 25,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const started = Date.now();
    const v = await check();
    if (v !== undefined) return v;
    const now = Date.now();
    if (now > deadline) throw new Error(`timed out after ${timeoutMs}ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, Math.max(everyMs, Math.min(2 * (now - started), 500))));
  }
}
