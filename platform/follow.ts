import { DeliverPolicy, type JetStreamClient, type JsMsg } from "@nats-io/jetstream";
import { LIVE_CONSUME } from "../streams/index.ts";

export interface Follower {
  /** Resolves once every message stored before the follower started has been handled. */
  readonly caughtUp: Promise<void>;
  /** Stops following; resolves when the handler is no longer running. */
  stop(): Promise<void>;
  /** Resolves (or rejects) when the follower ends on its own, e.g. a handler failure. */
  readonly done: Promise<void>;
}

/** What readiness checks see of a live follower (platform/ops-server.ts). */
export interface FollowerProgress {
  readonly stream: string;
  readonly filters: readonly string[];
  /** The sequence of the last message handled (fromSeq − 1 before the first). */
  readonly handledSeq: number;
  readonly caughtUp: boolean;
  /** Set when the follower ended on a handler failure: the process is then not ready. */
  readonly failed?: string;
}

// Every follower of this process, from start until stopped: readiness and lag read them here, so
// no service has to wire its followers to the ops listener by hand.
const active = new Set<FollowerProgress>();

/** The followers running in this process now. */
export const activeFollowers = (): readonly FollowerProgress[] => [...active];

export interface FollowOptions {
  readonly stream: string;
  readonly filters: readonly string[];
  /** Inclusive start sequence (default 1); ignored with `lastPerSubject`. */
  readonly fromSeq?: number;
  /** Start from the last message of each subject (heartbeats), then follow. */
  readonly lastPerSubject?: boolean;
}

/**
 * Follows a stream live through an ordered consumer (client-managed, flow-controlled, recreated by
 * the client on gaps), calling `onMsg` serially in stream order. `caughtUp` resolves once the
 * messages present at start have been handled, so a service can report ready only after replay. A
 * handler error stops the follower and rejects `done` (callers restart from their checkpoint).
 */
export async function follow(
  js: JetStreamClient,
  opts: FollowOptions,
  onMsg: (m: JsMsg) => Promise<void> | void,
): Promise<Follower> {
  const jsm = await js.jetstreamManager();
  // The end as of now: the highest sequence among the filters' last messages (0 = nothing yet).
  let endSeq = 0;
  for (const f of opts.filters) {
    const last = await jsm.direct.getMessage(opts.stream, { last_by_subj: f }).catch(() => null);
    endSeq = Math.max(endSeq, last?.seq ?? 0);
  }
  const fromSeq = Math.max(1, opts.fromSeq ?? 1);
  const oc = await js.consumers.get(opts.stream, {
    filter_subjects: [...opts.filters],
    ...(opts.lastPerSubject
      ? { deliver_policy: DeliverPolicy.LastPerSubject }
      : { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: fromSeq }),
  });
  const messages = await oc.consume({ max_messages: 256, ...LIVE_CONSUME });
  let markCaughtUp!: () => void;
  const caughtUp = new Promise<void>((ok) => {
    markCaughtUp = ok;
  });
  let stopped = false;
  const progress: { -readonly [K in keyof FollowerProgress]: FollowerProgress[K] } = {
    stream: opts.stream,
    filters: opts.filters,
    handledSeq: fromSeq - 1,
    caughtUp: false,
  };
  active.add(progress);
  const caught = () => {
    progress.caughtUp = true;
    markCaughtUp();
  };
  if (endSeq === 0 || (!opts.lastPerSubject && endSeq < fromSeq)) caught();
  const done = (async () => {
    for await (const m of messages) {
      if (stopped) break;
      await onMsg(m);
      progress.handledSeq = m.seq;
      if (m.seq >= endSeq) caught();
    }
  })();
  done.then(
    () => active.delete(progress),
    (e: unknown) => {
      if (!stopped) progress.failed = String(e);
    },
  );
  return {
    caughtUp,
    done,
    async stop() {
      stopped = true;
      active.delete(progress);
      await messages.close();
      await done.catch(() => undefined);
    },
  };
}
