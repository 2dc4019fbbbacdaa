import { DeliverPolicy, type JetStreamClient, type JetStreamManager } from "@nats-io/jetstream";
import { JetStreamStatusError } from "@nats-io/jetstream/internal";
import { decodeEvent, type DroverEvent } from "../../../contracts/index.ts";
import type { StreamLayout } from "../../../streams/layout.ts";
import { tenantFilter } from "../../../streams/subjects.ts";
import { subjectVisibleIn, visibleIn, type FeedScope } from "../domain/access.ts";
import { typeSubjects } from "../domain/event-types.ts";
import { LIVE_CONSUME } from "../../../streams/index.ts";

/** One frame of an event feed. */
export type FeedFrame =
  | {
      readonly kind: "event";
      readonly seq: number;
      readonly subject: string;
      readonly time: string;
      readonly event: DroverEvent;
    }
  /** A stored message that does not decode: reported with its sequence, never skipped silently. */
  | { readonly kind: "invalid"; readonly seq: number; readonly subject: string; readonly error: string }
  /** Everything stored when the feed opened has been delivered; what follows is live. */
  | { readonly kind: "caught-up"; readonly seq: number };

/** A frame as the API sends it: the stream's frames, and `end` when a per-run feed saw its run end. */
export type SseFrame = FeedFrame | { readonly kind: "end"; readonly status: string; readonly seq: number };

/** A live, ordered feed of stored events. */
export interface EventFeed {
  /**
   * Yields the events of `scope` after stream sequence `afterSeq` in stream order, one
   * `caught-up` frame once the history as of opening is delivered, then live events until `signal`
   * aborts or the connection closes (the iterator then ends; the client resumes after the last id).
   * Rejects with the JetStream error when the feed cannot be opened.
   */
  follow(scope: FeedScope, afterSeq: number, signal: AbortSignal, types?: string): AsyncIterable<FeedFrame>;
  /** The stream's last sequence now (`?from=now` follows after it). */
  head(): Promise<number>;
}

/**
 * The feed straight from JetStream: an ordered consumer (ephemeral, flow-controlled, re-created
 * by the client on gaps) on the scope's subjects. A tenant's scope is filtered by the server on
 * `<prefix>.*.<tenant>.>` and re-checked per event ({@link visibleIn}). With `types` (`?types=`),
 * the server filters on those events' subjects ({@link typeSubjects}): a feed of run ends is sent
 * run ends, not every step of the tenant to decode and drop.
 */
export function jetStreamFeed(js: JetStreamClient, jsm: JetStreamManager, layout: StreamLayout): EventFeed {
  return {
    head: async () => (await jsm.streams.info(layout.eventStream)).state.last_seq,
    async *follow(scope, afterSeq, signal, types) {
      const filters = typeSubjects(types, scope)?.map((s) => `${layout.eventPrefix}.${s}`) ?? [
        scope.kind === "all" ? `${layout.eventPrefix}.>` : tenantFilter(layout, scope.tenantId),
      ];
      const start = afterSeq + 1;
      // Whether anything is stored for the filters yet: with nothing to replay, `caught-up` comes first.
      let caughtUp = true;
      for (const f of filters) if (caughtUp) caughtUp = !(await anyAtOrAfter(jsm, layout.eventStream, f, start));
      const consumer = await js.consumers.get(layout.eventStream, {
        // An array: the client creates it by the unnamed request, the only form services may use (docs/nats-identities.md).
        filter_subjects: filters,
        deliver_policy: DeliverPolicy.StartSequence,
        opt_start_seq: start,
      });
      const messages = await consumer.consume(LIVE_CONSUME);
      const stop = () => messages.stop();
      signal.addEventListener("abort", stop, { once: true });
      try {
        if (caughtUp) yield { kind: "caught-up", seq: afterSeq };
        if (signal.aborted) return;
        for await (const m of messages) {
          const frame = toFrame(m);
          const visible =
            frame.kind === "event"
              ? visibleIn(scope, frame.event)
              : subjectVisibleIn(scope, frame.subject.slice(layout.eventPrefix.length + 1).split("."));
          if (visible) yield frame;
          if (!caughtUp && m.info.pending === 0) {
            caughtUp = true;
            yield { kind: "caught-up", seq: m.seq };
          }
        }
      } finally {
        signal.removeEventListener("abort", stop);
        messages.stop();
      }
    },
  };
}

function toFrame(m: {
  seq: number;
  subject: string;
  time: Date;
  data: Uint8Array;
}): Exclude<FeedFrame, { kind: "caught-up" }> {
  try {
    return {
      kind: "event",
      seq: m.seq,
      subject: m.subject,
      time: m.time.toISOString(),
      event: decodeEvent(m.data, { seq: m.seq, subject: m.subject }),
    };
  } catch (e) {
    return { kind: "invalid", seq: m.seq, subject: m.subject, error: (e as Error).message };
  }
}

async function anyAtOrAfter(jsm: JetStreamManager, stream: string, filter: string, seq: number): Promise<boolean> {
  try {
    return (await jsm.direct.getMessage(stream, { seq, next_by_subj: filter })) !== null;
  } catch (e) {
    if (e instanceof JetStreamStatusError && e.code === 404) return false;
    throw e;
  }
}
