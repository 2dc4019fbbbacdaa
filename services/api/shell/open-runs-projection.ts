import { DeliverPolicy, type JetStreamClient, type JetStreamManager } from "@nats-io/jetstream";
import { DroverError } from "../../../contracts/index.ts";
import type { StreamLayout } from "../../../streams/layout.ts";
import { emptyOpenRuns, foldOpenRunEvent, openRunCount, queueDepths, waitingRunCount } from "../domain/open-runs.ts";
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
  /** Ends the claim: `appended` keeps counting the run until the projection folds its `submitted`. */
  release(appended: boolean): void;
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
 * A live in-memory projection of every run event's subject (`<prefix>.run.>`), through an ordered
 * consumer: from its snapshot `api-open-runs/1` when one is trusted and then the tail, else from
 * sequence 1 (nothing to lose either way; docs/snapshots.md). Before answering it waits until it
 * has folded the tenant's last stored run event, found with a leader read, so a count never misses
 * a run this process just appended.
 */
export async function startOpenRunsProjection(
  js: JetStreamClient,
  jsm: JetStreamManager,
  layout: StreamLayout,
  opts: {
    readonly catchUpTimeoutMs?: number;
    readonly snapshots?: SnapshotOptions & { readonly log: Logger; readonly clock: Clock };
  } = {},
): Promise<OpenRunsProjection> {
  const state = emptyOpenRuns();
  const image: Snapshottable = {
    kind: OPEN_RUNS_KIND,
    encode: () => encodeOpenRuns(state),
    restore: (body) => restoreOpenRuns(state, body),
  };
  const snap = opts.snapshots;
  const { fromSeq } = snap ? await restoreFromSnapshot(snap.store, image, snap) : { fromSeq: 1 };
  const writer =
    snap?.policy && snapshotWriter(snap.store, image, snap.policy, snap.clock, { ...snap, startSeq: fromSeq - 1 });
  // tenant → this process's submissions being appended (false) or appended and not yet folded (true).
  const claims = new Map<string, Map<string, boolean>>();
  const waiters = new Set<() => void>();
  const skip = layout.eventPrefix.length + 1;
  const consumer = await js.consumers.get(layout.eventStream, {
    // An array: the client creates it by the unnamed request, the only form services may use (docs/nats-identities.md).
    filter_subjects: [`${layout.eventPrefix}.run.>`],
    ...(fromSeq > 1
      ? { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: fromSeq }
      : { deliver_policy: DeliverPolicy.All }),
  });
  const messages = await consumer.consume(LIVE_CONSUME);
  const loop = (async () => {
    for await (const m of messages) {
      const tokens = m.subject.slice(skip).split(".");
      foldOpenRunEvent(state, m.seq, tokens);
      if (writer) writer.applied(m.seq);
      const mine = claims.get(tokens[1]!);
      if (tokens[3] === "submitted" && mine?.get(tokens[2]!) === true) {
        mine.delete(tokens[2]!);
        if (mine.size === 0) claims.delete(tokens[1]!);
      }
      for (const wake of waiters) wake();
    }
  })();
  loop.catch(() => undefined); // a closed connection ends the loop; counts then time out as unavailable

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

  const caughtUpFor = async (tenantId: string | undefined): Promise<void> => {
    const filter = `${layout.eventPrefix}.run.${tenantId ?? "*"}.>`;
    let last = 0;
    try {
      last = (await jsm.streams.getMessage(layout.eventStream, { last_by_subj: filter }))?.seq ?? 0;
    } catch (e) {
      throw new DroverError(
        "event-store-unavailable",
        `reading the last run event of ${tenantId === undefined ? "any tenant" : `tenant ${tenantId}`}: ${(e as Error).message}`,
        { cause: e },
      );
    }
    await caughtUpTo(last);
  };

  // Claims whose run the projection has not folded yet (a folded one is already in the counts).
  const unfolded = (tenantId: string): number => {
    let n = 0;
    for (const id of claims.get(tenantId)?.keys() ?? [])
      if (!state.open.get(tenantId)?.has(id) && !state.closed.get(tenantId)?.has(id)) n++;
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
      mine.set(sharedRunId, false);
      return {
        ...c,
        release(appended) {
          const folded = state.open.get(tenantId)?.has(sharedRunId) || state.closed.get(tenantId)?.has(sharedRunId);
          if (appended && !folded) mine.set(sharedRunId, true);
          else mine.delete(sharedRunId);
          if (mine.size === 0 && claims.get(tenantId) === mine) claims.delete(tenantId);
        },
      };
    },
    async queueDepths() {
      await caughtUpFor(undefined);
      return queueDepths(state);
    },
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
