import { DeliverPolicy, type JetStreamClient, type JetStreamManager } from "@nats-io/jetstream";
import { DroverError } from "../../../contracts/index.ts";
import type { StreamLayout } from "../../../streams/layout.ts";
import { emptyOpenRuns, foldOpenRunEvent, openRunCount, queueDepths, waitingRunCount } from "../domain/open-runs.ts";
import { LIVE_CONSUME } from "../../../streams/index.ts";

/** Counts a tenant's unfinished runs for the submission quota. */
export interface OpenRunsCounter {
  /**
   * The tenant's runs submitted and not yet terminal, counting at least every run event of the
   * tenant stored before the call (read-your-writes for this process's own appends).
   * Rejects with `event-store-unavailable` when the projection cannot catch up in time.
   */
  openRuns(tenantId: string): Promise<number>;
  /** The tenant's runs submitted and not yet started (nor terminal), with the same read-your-writes guarantee. */
  queuedRuns(tenantId: string): Promise<number>;
  /** Every tenant's runs submitted and not yet started (nor terminal), counting every run event stored before the call. */
  queueDepths(): Promise<Record<string, number>>;
}

export interface OpenRunsProjection extends OpenRunsCounter {
  stop(): Promise<void>;
}

/**
 * A live in-memory projection of every run event's subject (`<prefix>.run.>`), from sequence 1,
 * through an ordered consumer. Rebuilt from the log at every start (nothing to lose). Before
 * answering it waits until it has folded the tenant's last stored run event, found with a leader
 * read, so a count never misses a run this process just appended.
 */
export async function startOpenRunsProjection(
  js: JetStreamClient,
  jsm: JetStreamManager,
  layout: StreamLayout,
  opts: { readonly catchUpTimeoutMs?: number } = {},
): Promise<OpenRunsProjection> {
  const state = emptyOpenRuns();
  const waiters = new Set<() => void>();
  const skip = layout.eventPrefix.length + 1;
  const consumer = await js.consumers.get(layout.eventStream, {
    filter_subjects: `${layout.eventPrefix}.run.>`,
    deliver_policy: DeliverPolicy.All,
  });
  const messages = await consumer.consume(LIVE_CONSUME);
  const loop = (async () => {
    for await (const m of messages) {
      foldOpenRunEvent(state, m.seq, m.subject.slice(skip).split("."));
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

  return {
    async openRuns(tenantId) {
      await caughtUpFor(tenantId);
      return openRunCount(state, tenantId);
    },
    async queuedRuns(tenantId) {
      await caughtUpFor(tenantId);
      return waitingRunCount(state, tenantId);
    },
    async queueDepths() {
      await caughtUpFor(undefined);
      return queueDepths(state);
    },
    async stop() {
      messages.stop();
      await loop.catch(() => undefined);
    },
  };
}
