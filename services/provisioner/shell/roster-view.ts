import type { Logger } from "pino";
import type { Clock } from "../../../platform/clock.ts";
import type { SnapshotOptions } from "../../../platform/snapshots/options.ts";
import {
  restoreFromSnapshot,
  snapshotWriter,
  type Snapshottable,
  type SnapshotWriter,
} from "../../../platform/snapshots/snapshotted.ts";
import { runtimeRef, type EventStore, type StreamLayout } from "../../../streams/index.ts";
import { decodeRosterImage, encodeRosterImage, ROSTER_KIND } from "../domain/roster-image.ts";
import {
  emptyRoster,
  evolveRuntime,
  type Roster,
  type RuntimeEvent,
  type RuntimeSummary,
} from "../domain/runtime-roster.ts";

/** How the roster starts and how much of it stays in memory. */
export interface RosterOptions {
  /** Ended runtimes kept in memory at most (`DROVER_MAX_ENDED_RUNTIMES`), the first to end leave first; undefined: all. */
  readonly maxEnded?: number;
  /** Start from the snapshot `provisioner-roster/2` and write it periodically (docs/snapshots.md). */
  readonly snapshots?: SnapshotOptions & { readonly log: Logger; readonly clock: Clock };
}

/**
 * A runtime's first event: appended at expected sequence 0 (provisioner.ts for a tenant's runtime,
 * warm-pool.ts for a pool member), so an unknown runtime seen with one of these is new, never a
 * dropped one coming back.
 */
const FIRST = new Set(["runtime.registered", "runtime.pool-member-registered"]);

/**
 * The provisioner's in-memory fold of every runtime event (`<prefix>.runtime.*.*`), caught up on
 * demand from the last sequence it saw. Counting a tenant's runtimes needs the whole roster, not
 * one aggregate: one summary per runtime. It starts from its snapshot when one is trusted (else
 * from sequence 1). Beyond `maxEnded` the runtimes that ended first leave memory: no plan, pool or
 * drain decision reads an ended runtime (each filters `endedBy`), and an event of an unknown
 * runtime after a drop that is not a first event is a dropped one coming back: its whole history
 * is read from the log before it is folded, so it is seen ended (never live by prefix).
 */
export class RosterView implements Snapshottable {
  readonly kind = ROSTER_KIND;
  private readonly runtimes = new Map<string, RuntimeSummary>();
  /** Ended runtimes in memory, in the order they ended. */
  private readonly ended = new Set<string>();
  private lastSeq = 0;
  /** Ended runtimes dropped from memory so far. */
  dropped = 0;
  /** Runtimes read back from the log because they came back after a drop (tests, logs). */
  readBack = 0;
  private view: Roster = emptyRoster();
  private dirty = false;
  private catching: Promise<Roster> | undefined;
  /** The replay that starts once `catching` ends, shared by every caller that arrived during it. */
  private next: Promise<Roster> | undefined;
  private readonly restoring: Promise<void>;
  private writer: SnapshotWriter | undefined;

  constructor(
    private readonly store: EventStore,
    private readonly layout: StreamLayout,
    private readonly opts: RosterOptions = {},
  ) {
    const snap = opts.snapshots;
    this.restoring = snap
      ? restoreFromSnapshot(snap.store, this, snap).then(({ fromSeq }) => {
          if (snap.policy)
            this.writer = snapshotWriter(snap.store, this, snap.policy, snap.clock, { ...snap, startSeq: fromSeq - 1 });
        })
      : Promise.resolve();
  }

  /** Runtime summaries in memory now (live ones and at most `maxEnded` ended ones). */
  get size(): number {
    return this.runtimes.size;
  }

  /**
   * The roster including every runtime event stored before the call. A caller arriving during a
   * replay waits for a fresh one (it may need later events), shared with every other such caller.
   * Each caller gets a roster that later folds do not change.
   * Failure modes: store errors propagate; the roster keeps what it had folded.
   */
  async current(): Promise<Roster> {
    await this.restoring;
    if (!this.catching) return this.replay();
    // Every caller arriving during a replay shares the one that starts after it: one at a time, 20
    // scale-outs deciding at once queued 60 replays end to end (seconds at load ~20, claims waiting
    // with warm members ready).
    this.next ??= this.catching
      .catch(() => undefined)
      .then(() => {
        this.next = undefined;
        return this.replay();
      });
    return this.next;
  }

  private replay(): Promise<Roster> {
    const p = this.catchUp().finally(() => {
      if (this.catching === p) this.catching = undefined;
    });
    this.catching = p;
    return p;
  }

  /** Writes a snapshot now if the roster moved past the last one (tests, shutdown). */
  async writeSnapshot(): Promise<void> {
    await this.restoring;
    await this.writer?.flush();
  }

  async stop(): Promise<void> {
    await this.restoring;
    await this.writer?.stop();
  }

  encode(): Uint8Array {
    return encodeRosterImage({
      lastSeq: this.lastSeq,
      runtimes: [...this.runtimes.values()],
      ended: [...this.ended],
      dropped: this.dropped,
    });
  }

  restore(body: Uint8Array): void {
    const img = decodeRosterImage(body);
    this.runtimes.clear();
    this.ended.clear();
    for (const r of img.runtimes) this.runtimes.set(r.runtimeInstanceId, r);
    for (const id of img.ended) this.ended.add(id);
    this.lastSeq = img.lastSeq;
    this.dropped = img.dropped;
    this.dirty = true;
    this.evict();
  }

  private async catchUp(): Promise<Roster> {
    const prefix = `${this.layout.eventPrefix}.runtime.`;
    await this.store.replay(
      { seq: this.lastSeq + 1 },
      async (s) => {
        // The filter already limits the replay; the check keeps the fold safe on stores that ignore it.
        if (!s.subject.startsWith(prefix)) return;
        // `<prefix>.runtime.<id>.<event>`: the id is the token after the aggregate name.
        const id = s.subject.slice(prefix.length).split(".")[0] as string;
        await this.fold(id, s.seq, s.event as RuntimeEvent);
        this.writer?.applied(s.seq);
      },
      // A message that does not decode is no runtime fact: stepped over (capacity and forensics record
      // it as a dead letter), so one bad message can never stop every scale-out.
      { filter: `${prefix}>`, onUndecodable: () => undefined },
    );
    if (this.dirty) this.view = { runtimes: new Map(this.runtimes), lastSeq: this.lastSeq };
    this.dirty = false;
    return this.view;
  }

  private async fold(id: string, seq: number, e: RuntimeEvent): Promise<void> {
    if (seq <= this.lastSeq) return;
    let before = this.runtimes.get(id);
    if (!before && this.dropped > 0 && !FIRST.has(e.type)) before = await this.history(id, seq);
    const after = evolveRuntime(before, id, seq, e);
    this.runtimes.set(id, after);
    this.lastSeq = seq;
    this.dirty = true;
    if (after.endedBy && !this.ended.has(id)) {
      this.ended.add(id);
      this.evict();
    }
  }

  /** The fold of a runtime's events stored before `seq`, read from the log (undefined: it has none). */
  private async history(id: string, seq: number): Promise<RuntimeSummary | undefined> {
    const h = await this.store.read(runtimeRef(id), { skipUndecodable: true });
    let s: RuntimeSummary | undefined;
    for (const x of h.events) if (x.seq < seq) s = evolveRuntime(s, id, x.seq, x.event as RuntimeEvent);
    if (s) this.readBack++;
    return s;
  }

  private evict(): void {
    const max = this.opts.maxEnded;
    if (max === undefined) return;
    for (const id of this.ended) {
      if (this.ended.size <= max) break;
      this.ended.delete(id);
      this.runtimes.delete(id);
      this.dropped++;
    }
  }
}
