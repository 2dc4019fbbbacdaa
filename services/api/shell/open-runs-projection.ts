import {
  DeliverPolicy,
  type JetStreamClient,
  type JetStreamManager,
  type JsMsg,
  type MsgRequest,
} from "@nats-io/jetstream";
import { DroverError } from "../../../contracts/index.ts";
import type { StreamLayout } from "../../../streams/layout.ts";
import {
  boundClosed,
  emptyOpenRuns,
  foldOpenRunEvent,
  isKnownRun,
  OPEN_RUN_EVENTS,
  openRunCount,
  queueDepths,
  waitingRunCount,
} from "../domain/open-runs.ts";
import { firstByExpectation } from "../../../streams/first-by-expectation.ts";
import { LIVE_CONSUME } from "../../../streams/index.ts";
import type { Logger } from "pino";
import type { Clock } from "../../../platform/clock.ts";
import type { SnapshotOptions } from "../../../platform/snapshots/options.ts";
import { restoreFromSnapshot, snapshotWriter, type Snapshottable } from "../../../platform/snapshots/snapshotted.ts";
import { encodeOpenRuns, OPEN_RUNS_KIND, restoreOpenRuns } from "../domain/open-runs-image.ts";

/** A place held for one submission while it is decided and appended (see `OpenRunsCounter.claim`). */
export interface Claim {
  /** The tenant's runs submitted and not yet terminal, without this one. */
  readonly openRuns: number;
  /** The tenant's runs submitted and not yet started (nor terminal), without this one. */
  readonly queuedRuns: number;
  /**
   * Ends the claim. `appendedSeq`, the stream sequence this submission's `submitted` is stored at,
   * keeps counting the run until the projection has folded that sequence; undefined: nothing of
   * ours was stored (a conflict, an error), the place is freed.
   */
  release(appendedSeq?: number): void;
}

/** Counts a tenant's unfinished runs for the submission quota and the queue cap. */
export interface OpenRunsCounter {
  /**
   * Counts the tenant's runs for a new submission of `sharedRunId` and holds its place, in one step
   * of this process: the counts include every submission of this process still being appended, so
   * concurrent submissions never overshoot a limit here. Far from the limits (`nearLimit`) the
   * counts are the projection's as it stands (no round trip: the submit hot path); near them they
   * include at least every run event of the tenant stored before the call (a leader read, then a
   * wait for the projection to fold it). Rejects with `event-store-unavailable` when the
   * projection cannot catch up in time.
   */
  claim(
    tenantId: string,
    sharedRunId: string,
    limits: { readonly maxOpenRuns?: number; readonly maxQueuedRuns: number },
  ): Promise<Claim>;
  /** Every tenant's runs submitted and not yet started (nor terminal), counting every run event stored before the call. */
  queueDepths(): Promise<Record<string, number>>;
}

export interface OpenRunsProjection extends OpenRunsCounter {
  /** Closed run ids in memory now and those dropped beyond the bound so far (tests, gauges). */
  closedRuns(): { readonly inMemory: number; readonly dropped: number };
  /** Writes a snapshot now if the projection moved past the last one (tests). */
  writeSnapshot(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * Whether counts read without waiting for the log may be off by enough to cross a limit: within
 * 16 runs or 10 % of it. The projection lags the log by milliseconds, so far from a limit no
 * submission of another process (an API replica, a producer) can close the gap meanwhile.
 */
export function nearLimit(
  c: { readonly openRuns: number; readonly queuedRuns: number },
  limits: { readonly maxOpenRuns?: number; readonly maxQueuedRuns: number },
): boolean {
  const near = (n: number, max: number) => n + Math.max(16, Math.ceil(max / 10)) >= max;
  return (
    near(c.queuedRuns, limits.maxQueuedRuns) ||
    (limits.maxOpenRuns !== undefined && near(c.openRuns, limits.maxOpenRuns))
  );
}

/**
 * A live in-memory projection of the subjects of the run events that move the counts
 * (`<prefix>.run.*.*.<event>` for each of {@link OPEN_RUN_EVENTS}: the server sends no other run
 * event, which would only advance the sequence), through an ordered consumer: from its snapshot `api-open-runs/1` when one is trusted and then the tail, else from
 * sequence 1 (nothing to lose either way; docs/snapshots.md). Closed runs beyond `maxClosed` leave
 * memory (docs/snapshots.md "Bounded memory (api)"). Before answering it waits until it
 * has folded the tenant's last stored run event of those kinds, found with leader reads, so a count
 * never misses a run this process just appended.
 */
export async function startOpenRunsProjection(
  js: JetStreamClient,
  jsm: JetStreamManager,
  layout: StreamLayout,
  opts: {
    readonly catchUpTimeoutMs?: number;
    /** Closed run ids kept in memory (`DROVER_MAX_TERMINAL_RUNS`); undefined: every one. */
    readonly maxClosed?: number;
    readonly snapshots?: SnapshotOptions & { readonly log: Logger; readonly clock: Clock };
  } = {},
): Promise<OpenRunsProjection> {
  const state = emptyOpenRuns();
  const image: Snapshottable = {
    kind: OPEN_RUNS_KIND,
    encode: () => encodeOpenRuns(state),
    restore: (body) => {
      restoreOpenRuns(state, body);
      boundClosed(state, opts.maxClosed);
    },
  };
  const snap = opts.snapshots;
  const { fromSeq } = snap ? await restoreFromSnapshot(snap.store, image, snap) : { fromSeq: 1 };
  const writer =
    snap?.policy && snapshotWriter(snap.store, image, snap.policy, snap.clock, { ...snap, startSeq: fromSeq - 1 });
  // tenant → this process's submissions being appended (undefined) or stored at a sequence not yet folded.
  const claims = new Map<string, Map<string, number | undefined>>();
  const waiters = new Set<() => void>();
  const skip = layout.eventPrefix.length + 1;
  const consumer = await js.consumers.get(layout.eventStream, {
    // The fold reads subjects and headers only (firstByExpectation): the server sends no payload,
    // which a `submitted` carries its whole DAG and input in (three deliveries per run).
    headers_only: true,
    // An array: the client creates it by the unnamed request, the only form services may use (docs/nats-identities.md).
    filter_subjects: OPEN_RUN_EVENTS.map((name) => `${layout.eventPrefix}.run.*.*.${name}`),
    ...(fromSeq > 1
      ? { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: fromSeq }
      : { deliver_policy: DeliverPolicy.All }),
  });
  const messages = await consumer.consume(LIVE_CONSUME);
  const loop = (async () => {
    for await (const m of messages) {
      const tokens = m.subject.slice(skip).split(".");
      // A late duplicate `submitted` of a closed run that left memory advances the sequence only.
      if (await lateDuplicate(m, tokens)) foldOpenRunEvent(state, m.seq, []);
      else foldOpenRunEvent(state, m.seq, tokens, opts.maxClosed);
      if (writer) writer.applied(m.seq);
      const mine = claims.get(tokens[1]!);
      const stored = mine?.get(tokens[2]!);
      if (tokens[3] === "submitted" && stored !== undefined && stored <= m.seq) {
        mine!.delete(tokens[2]!);
        if (mine!.size === 0) claims.delete(tokens[1]!);
      }
      for (const wake of waiters) wake();
    }
  })();
  loop.catch(() => undefined); // a closed connection ends the loop; counts then time out as unavailable

  /**
   * Whether `m`, a `submitted` of a run this view does not know after closed runs left memory, is
   * a late duplicate of one of them: unless the server already checked it was the run's first
   * (`firstByExpectation`), the run's first `submitted` is read from the log (one direct get; only
   * producers that publish without the expectation get here). A read that fails stops the fold
   * (the loop ends; counts then answer unavailable) rather than guess.
   */
  async function lateDuplicate(m: JsMsg, tokens: readonly string[]): Promise<boolean> {
    const [aggregate, tenant, runId, name] = tokens;
    if (state.dropped === 0 || aggregate !== "run" || name !== "submitted" || tokens.length !== 4) return false;
    if (isKnownRun(state, tenant!, runId!) || firstByExpectation(m.headers, m.subject)) return false;
    // A leader read (STREAM.MSG.GET takes `next_by_subj` too; the client's type names only seq and last_by_subj).
    const first = await jsm.streams.getMessage(layout.eventStream, {
      seq: 1,
      next_by_subj: m.subject,
    } as MsgRequest);
    return first !== null && first.seq < m.seq;
  }

  const caughtUpTo = (seq: number): Promise<void> =>
    new Promise((resolve, reject) => {
      if (state.lastSeq >= seq) return resolve();
      const timer = setTimeout(() => {
        waiters.delete(check);
        reject(
          new DroverError(
            "event-store-unavailable",
            `the quota projection did not reach stream sequence ${seq} in time`,
            { details: { seq, at: state.lastSeq } },
          ),
        );
      }, opts.catchUpTimeoutMs ?? 5_000);
      const check = () => {
        if (state.lastSeq >= seq) {
          clearTimeout(timer);
          waiters.delete(check);
          resolve();
        }
      };
      waiters.add(check);
    });

  // The last of the run events the projection is sent (one leader read per kind, side by side): an
  // `admitted` or `dispatched` stored later is never delivered, and waiting for it would time out.
  const caughtUpFor = async (tenantId: string | undefined): Promise<void> => {
    let last = 0;
    try {
      const lasts = await Promise.all(
        OPEN_RUN_EVENTS.map(
          async (name) =>
            (
              await jsm.streams.getMessage(layout.eventStream, {
                last_by_subj: `${layout.eventPrefix}.run.${tenantId ?? "*"}.*.${name}`,
              })
            )?.seq ?? 0,
        ),
      );
      last = Math.max(0, ...lasts);
    } catch (e) {
      throw new DroverError(
        "event-store-unavailable",
        `reading the last run event of ${tenantId === undefined ? "any tenant" : `tenant ${tenantId}`}: ${(e as Error).message}`,
        { cause: e },
      );
    }
    await caughtUpTo(last);
  };

  // Claims whose run the projection has not folded yet (a folded one is already in the counts): one
  // stored beyond the folded sequence, or one being appended whose run is not open (a rival's
  // `submitted` of the same run may be folded meanwhile; if it closed too, the claim counts one
  // extra until released: the conservative side).
  const unfolded = (tenantId: string): number => {
    let n = 0;
    for (const [id, seq] of claims.get(tenantId) ?? [])
      if (seq === undefined ? !state.open.get(tenantId)?.has(id) : seq > state.lastSeq) n++;
    return n;
  };
  const counts = (tenantId: string) => {
    const pending = unfolded(tenantId);
    return {
      openRuns: openRunCount(state, tenantId) + pending,
      queuedRuns: waitingRunCount(state, tenantId) + pending,
    };
  };

  return {
    async claim(tenantId, sharedRunId, limits) {
      if (nearLimit(counts(tenantId), limits)) await caughtUpFor(tenantId);
      // From here to the claim is one synchronous step: no other submission of this process interleaves.
      const c = counts(tenantId);
      let mine = claims.get(tenantId);
      if (!mine) claims.set(tenantId, (mine = new Map()));
      mine.set(sharedRunId, undefined);
      return {
        ...c,
        release(appendedSeq) {
          if (appendedSeq !== undefined && appendedSeq > state.lastSeq) mine.set(sharedRunId, appendedSeq);
          else mine.delete(sharedRunId);
          if (mine.size === 0 && claims.get(tenantId) === mine) claims.delete(tenantId);
        },
      };
    },
    async queueDepths() {
      await caughtUpFor(undefined);
      return queueDepths(state);
    },
    closedRuns: () => ({ inMemory: state.closedOrder.size, dropped: state.dropped }),
    writeSnapshot: async () => {
      if (writer) await writer.flush();
    },
    async stop() {
      messages.stop();
      await loop.catch(() => undefined);
      if (writer) await writer.stop();
    },
  };
}
