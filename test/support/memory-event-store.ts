import { DroverError, parseEvent, type DroverEvent, type EventType } from "../../contracts/index.ts";
import { aggregateSubject, eventSubject, type AggregateRef } from "../../streams/subjects.ts";
import { DEFAULT_LAYOUT } from "../../streams/layout.ts";
import type {
  AggregateHistory,
  Appended,
  AppendOptions,
  BatchEntry,
  EventStore,
  ReplayFrom,
  StoredEvent,
} from "../../streams/types.ts";

/**
 * An in-memory EventStore with the same OCC rules as the JetStream one (expected last sequence per
 * aggregate, msg-id dedupe that only acks our own event as a duplicate, schema validation before
 * storing). For unit tests of shells: it proves NO transport and no JetStream behaviour. `failNext`
 * injects `event-store-unavailable` on the next n appends; `appendLog` records every attempt.
 */
export class MemoryEventStore implements EventStore {
  readonly events: StoredEvent[] = [];
  readonly appendLog: {
    subject: string;
    expectedSeq: number;
    msgId?: string;
    outcome: "stored" | "duplicate" | "conflict" | "unavailable";
  }[] = [];
  private readonly byMsgId = new Map<string, StoredEvent>();
  private unavailable = 0;

  failNext(n: number): void {
    this.unavailable = n;
  }

  private last(ref: AggregateRef): number {
    const prefix = `${aggregateSubject(DEFAULT_LAYOUT, ref)}.`;
    return this.events.filter((e) => e.subject.startsWith(prefix)).at(-1)?.seq ?? 0;
  }

  async append(ref: AggregateRef, event: DroverEvent, opts: AppendOptions): Promise<Appended> {
    const parsed = parseEvent(event);
    const subject = eventSubject(DEFAULT_LAYOUT, ref, parsed.type);
    const log = (outcome: MemoryEventStore["appendLog"][number]["outcome"]) =>
      this.appendLog.push({ subject, expectedSeq: opts.expectedSeq, msgId: opts.msgId, outcome });
    if (this.unavailable > 0) {
      this.unavailable--;
      log("unavailable");
      throw new DroverError("event-store-unavailable", "injected: no answer");
    }
    const msgId = opts.msgId ?? `${aggregateSubject(DEFAULT_LAYOUT, ref)}:${opts.expectedSeq}`;
    const dup = this.byMsgId.get(msgId);
    if (dup && dup.event.eventId === parsed.eventId) {
      log("duplicate");
      return { seq: dup.seq, duplicate: true };
    }
    if (dup || this.last(ref) !== opts.expectedSeq) {
      log("conflict");
      throw new DroverError("version-conflict", `expected ${opts.expectedSeq}, aggregate is at ${this.last(ref)}`, {
        details: { subject, expectedSeq: opts.expectedSeq },
      });
    }
    const stored: StoredEvent = { seq: this.events.length + 1, subject, time: new Date(0), event: parsed };
    this.events.push(stored);
    this.byMsgId.set(msgId, stored);
    log("stored");
    return { seq: stored.seq, duplicate: false };
  }

  async appendAll(ref: AggregateRef, events: readonly DroverEvent[], opts: AppendOptions): Promise<Appended[]> {
    const out: Appended[] = [];
    let expectedSeq = opts.expectedSeq;
    for (const [i, e] of events.entries()) {
      const a = await this.append(ref, e, {
        expectedSeq,
        msgId: opts.msgId ? (i === 0 ? opts.msgId : `${opts.msgId}#${i}`) : undefined,
      });
      out.push(a);
      expectedSeq = a.seq;
    }
    return out;
  }

  async appendAtomic(entries: readonly BatchEntry[]): Promise<Appended[]> {
    for (const e of entries)
      if (this.last(e.ref) !== e.expectedSeq)
        throw new DroverError("version-conflict", `batch expectation failed for ${e.ref.id}`);
    const out: Appended[] = [];
    for (const e of entries)
      out.push(
        ...(await this.appendAll(e.ref, e.events, {
          expectedSeq: e.expectedSeq,
          msgId: `batch:${e.ref.id}:${e.expectedSeq}`,
        })),
      );
    return out;
  }

  async read(ref: AggregateRef): Promise<AggregateHistory> {
    const prefix = `${aggregateSubject(DEFAULT_LAYOUT, ref)}.`;
    const events = this.events.filter((e) => e.subject.startsWith(prefix));
    return { events, lastSeq: events.at(-1)?.seq ?? 0 };
  }

  async lastSeq(ref: AggregateRef): Promise<number> {
    return this.last(ref);
  }

  async lastOfType(ref: AggregateRef, type: EventType): Promise<StoredEvent | undefined> {
    const subject = eventSubject(DEFAULT_LAYOUT, ref, type);
    return this.events.findLast((e) => e.subject === subject);
  }

  async replay(from: ReplayFrom, onEvent: (e: StoredEvent) => void | Promise<void>): Promise<number> {
    const start = "seq" in from ? from.seq : 1;
    for (const e of this.events.filter((x) => x.seq >= start)) await onEvent(e);
    return this.events.at(-1)?.seq ?? 0;
  }
}
