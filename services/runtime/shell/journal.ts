import { DroverError, isDroverError, type DroverEvent } from "../../../contracts/index.ts";
import type { AggregateRef } from "../../../streams/subjects.ts";
import type { EventStore } from "../../../streams/types.ts";

/**
 * Whether everything appended after `expectedSeq` is of the `stepOver` types (requests other
 * writers may add without taking the aggregate over, e.g. the API's `run.cancel-requested`); if so
 * the expectation moves past them. Read again, never assumed.
 */
async function laterEvents(store: EventStore, ref: AggregateRef, after: number) {
  return (await store.read(ref)).events.filter((e) => e.seq > after);
}

/** Backoff between same-msg-id retries of an append that got no answer (doubling, capped). */
const RETRY_FIRST_MS = 50;
const RETRY_CAP_MS = 2_000;

/**
 * The single writer of one aggregate from this runtime's point of view (identities-and-events.md
 * "Fencing"). Appends are serialized, each expecting exactly the sequence this writer last wrote or
 * read, so parallel steps never race each other and any foreign append (recovery's
 * `paused-for-recovery`, a replacement's step) makes the next append fail.
 *
 * A `version-conflict` is final: the journal marks itself lost, rejects every queued and later
 * append without sending it, and throws `execution-ownership-lost`. There is no re-read and no retry
 * over the top. An append with no answer (`event-store-unavailable`) is retried a few times with the
 * same msg id (JetStream dedupes it) and then surfaces.
 *
 * Msg ids carry the writer (runtime instance and epoch): JetStream checks the duplicate window
 * before the expected sequence, so two writers using the same id at the same expectation would see
 * the second acked as a "duplicate" of the first. A writer-unique id keeps that from masking a
 * conflict.
 */
export class AggregateJournal {
  private tail: Promise<unknown> = Promise.resolve();
  private lostError: DroverError | undefined;
  private lastTypeWritten: string | undefined;

  constructor(
    private readonly store: EventStore,
    readonly ref: AggregateRef,
    private seq: number,
    readonly writerKey: string,
    private readonly sleep: (ms: number) => Promise<void>,
    private readonly onRetry?: (attempt: number, error: DroverError) => void,
  ) {}

  /** Sequence of the last event this writer wrote or read: the next append's expectation. */
  get lastSeq(): number {
    return this.seq;
  }
  get lost(): DroverError | undefined {
    return this.lostError;
  }
  /** Type of the last event this writer appended (undefined before its first append). */
  get lastType(): string | undefined {
    return this.lastTypeWritten;
  }

  /**
   * Appends `event` after every append queued before it. Resolves with the stored sequence.
   * Rejects with `execution-ownership-lost` (conflict now or earlier), or the store's error.
   */
  append(event: DroverEvent, stepOver?: ReadonlySet<string>): Promise<number> {
    const run = this.tail.then(() => this.appendNow(event, stepOver));
    this.tail = run.catch(() => undefined);
    return run;
  }

  private async onlyStepOver(expectedSeq: number, types: ReadonlySet<string>): Promise<boolean> {
    const later = await laterEvents(this.store, this.ref, expectedSeq);
    if (later.length === 0 || !later.every((e) => types.has(e.event.type))) return false;
    this.seq = later.at(-1)!.seq;
    return true;
  }

  private async appendNow(event: DroverEvent, stepOver?: ReadonlySet<string>): Promise<number> {
    if (this.lostError) throw this.lostError;
    const expectedSeq = this.seq;
    const msgId = `${this.writerKey}:${this.ref.aggregate}:${this.ref.id}:${expectedSeq}`;
    for (let attempt = 1; ; attempt++) {
      try {
        const r = await this.store.append(this.ref, event, { expectedSeq, msgId });
        this.seq = r.seq;
        this.lastTypeWritten = event.type;
        return r.seq;
      } catch (e) {
        if (isDroverError(e, "version-conflict") && stepOver && (await this.onlyStepOver(expectedSeq, stepOver)))
          return this.appendNow(event);
        if (isDroverError(e, "version-conflict")) {
          this.lostError = new DroverError(
            "execution-ownership-lost",
            `another writer appended to ${this.ref.aggregate} ${this.ref.id} after sequence ${expectedSeq}; this runtime stops writing it`,
            { cause: e, details: { aggregate: this.ref.aggregate, id: this.ref.id, expectedSeq, event: event.type } },
          );
          throw this.lostError;
        }
        if (!isDroverError(e, "event-store-unavailable") || !e.retryable) throw e;
        this.onRetry?.(attempt, e);
        await this.sleep(Math.min(RETRY_CAP_MS, RETRY_FIRST_MS * 2 ** (attempt - 1)));
      }
    }
  }
}
