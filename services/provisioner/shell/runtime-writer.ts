import { isDroverError, type DroverEvent } from "../../../contracts/index.ts";
import { runtimeRef, type EventStore } from "../../../streams/index.ts";
import { evolveRuntime, type EndedBy, type RuntimeEvent, type RuntimeSummary } from "../domain/runtime-roster.ts";

const MAX_CONFLICTS = 8;

/** The runtime ended under us (its host exited, another provisioner retired it, recovery fenced it). */
export class RuntimeEnded extends Error {
  constructor(
    readonly runtimeInstanceId: string,
    readonly endedBy: EndedBy,
  ) {
    super(`runtime ${runtimeInstanceId} ended (${endedBy}) while its start was being recorded`);
    this.name = "RuntimeEnded";
  }
}

/**
 * Appends a start's events to one runtime aggregate, each conditional on the sequence this writer
 * last saw (several: one after another, never an atomic batch). Another writer in between (our own
 * host-exit recorder, a provisioner that took the request over, recovery) is a version conflict: the
 * writer re-reads and continues only if the runtime has not ended, so a retired or exited runtime can
 * never be published afterwards.
 *
 * Failure modes: `RuntimeEnded`; store errors (`event-store-unavailable`, `contract-violation`)
 * propagate; more than 8 consecutive conflicts rethrow the last `version-conflict`.
 */
export class RuntimeWriter {
  private summary: RuntimeSummary | undefined;
  private seq: number;

  constructor(
    private readonly store: EventStore,
    readonly runtimeInstanceId: string,
    expectedSeq = 0,
  ) {
    this.seq = expectedSeq;
  }

  /** Reads the aggregate as it is now (for a runtime this writer did not create). */
  static async open(store: EventStore, runtimeInstanceId: string): Promise<RuntimeWriter> {
    const w = new RuntimeWriter(store, runtimeInstanceId);
    await w.refresh();
    return w;
  }

  /**
   * The writer of a runtime whose first events this process has just appended (`stored`: their
   * sequences, in order), without reading them back. A writer in between is a conflict at the next
   * append, which re-reads (as after `open`).
   */
  static after(
    store: EventStore,
    runtimeInstanceId: string,
    events: readonly DroverEvent[],
    stored: readonly { readonly seq: number }[],
  ): RuntimeWriter {
    const w = new RuntimeWriter(store, runtimeInstanceId);
    for (const [i, a] of stored.entries()) w.apply(a.seq, events[i] as RuntimeEvent);
    return w;
  }

  get state(): RuntimeSummary | undefined {
    return this.summary;
  }

  /** The aggregate's last sequence as this writer knows it. */
  get lastSeq(): number {
    return this.seq;
  }

  /**
   * Appends `events` in order after the last seen sequence. Throws `RuntimeEnded` if the runtime
   * has ended (checked first and after every conflict), unless `evenIfEnded` (clean-up records:
   * the failure reason and the retirement are written whatever happened meanwhile).
   */
  async append(events: readonly DroverEvent[], opts: { readonly evenIfEnded?: boolean } = {}): Promise<void> {
    let pending = [...events];
    for (let conflicts = 0; ; conflicts++) {
      if (!opts.evenIfEnded && this.summary?.endedBy)
        throw new RuntimeEnded(this.runtimeInstanceId, this.summary.endedBy);
      try {
        // One conditional append per event, each on the sequence the previous one got: not one
        // atomic batch. nats-server syncs an R1 file stream's batch to disk at its commit and commits
        // batches one at a time, so in a recovery burst each start's batches queued behind every
        // other batch of the stream (recovery's pauses, claims, refills): 20 two-entry batches at once
        // took 240–290 ms against 8–33 ms as appends (bench/atomic-batch.bench.ts). One aggregate's
        // events need no batch: each is conditional, so none lands after another writer's event.
        const ref = runtimeRef(this.runtimeInstanceId);
        while (pending.length > 0) {
          const a = await this.store.append(ref, pending[0]!, { expectedSeq: this.seq });
          this.apply(a.seq, pending.shift() as RuntimeEvent);
        }
        return;
      } catch (e) {
        if (!isDroverError(e, "version-conflict") || conflicts >= MAX_CONFLICTS) throw e;
        // Re-read to learn what the other writer did; events of ours stored before the conflict are in it.
        const stored = await this.refresh();
        pending = pending.filter((p) => !stored.has(p.eventId));
        if (pending.length === 0) return;
      }
    }
  }

  /** Re-reads the aggregate; returns the event ids it holds. */
  async refresh(): Promise<Set<string>> {
    const h = await this.store.read(runtimeRef(this.runtimeInstanceId));
    this.summary = undefined;
    for (const s of h.events) this.apply(s.seq, s.event as RuntimeEvent);
    this.seq = h.lastSeq;
    return new Set(h.events.map((s) => s.event.eventId as string));
  }

  private apply(seq: number, e: RuntimeEvent): void {
    this.summary = evolveRuntime(this.summary, this.runtimeInstanceId, seq, e);
    this.seq = Math.max(this.seq, seq);
  }
}
