import type { JetStreamClient } from "@nats-io/jetstream";
import { acquireLease } from "../../../platform/lease.ts";
import type { StreamLayout } from "../../../streams/index.ts";

export interface WriterTerm {
  stop(): Promise<void>;
}

export interface SingleWriter<T extends WriterTerm> {
  /** The running writer while this replica holds the lease; undefined while it stands by. */
  readonly current: T | undefined;
  /** Settles when the loop ends: after `stop()`, or rejected when `start` failed. */
  readonly done: Promise<void>;
  stop(): Promise<void>;
}

/**
 * Runs `start()` only while this replica holds the lease `forensics.<name>` (platform/lease.ts):
 * one projector writes a read-model database at a time, however many replicas run (two would race
 * their rebuilds, each dropping what the other built). A replica that finds the lease held stands
 * by and takes over once the holder stops renewing (a crash: within the lease TTL). A writer that
 * loses the lease (its renewals failed for a TTL, or another replica took it) stops writing at once
 * and stands by again.
 */
export function runAsSingleWriter<T extends WriterTerm>(o: {
  readonly js: JetStreamClient;
  readonly layout: StreamLayout;
  readonly name: string;
  readonly holder: string;
  /** Starts the writer; `signal` aborts the moment the lease is lost, before `stop()` is awaited. */
  readonly start: (signal: AbortSignal) => Promise<T>;
  readonly log?: { info(o: object, msg: string): void };
  readonly ttlMs?: number;
}): SingleWriter<T> {
  const abort = new AbortController();
  let current: T | undefined;
  let wakeStop: () => void = () => undefined;
  const stopping = new Promise<string>((r) => (wakeStop = () => r("stopped")));
  const done = (async () => {
    while (!abort.signal.aborted) {
      const lease = await acquireLease(o.js, o.layout, { service: "forensics", name: o.name }, o.holder, {
        signal: abort.signal,
        ...(o.ttlMs ? { ttlMs: o.ttlMs } : {}),
        onStandby: () => o.log?.info({ lease: o.name }, "standing by: another replica writes these read models"),
      }).catch((e: unknown) => {
        // NATS not answering (a restart, a cluster electing a leader): try again, never write meanwhile.
        o.log?.info({ lease: o.name, err: String(e) }, "writer lease not reachable: trying again");
        return "retry" as const;
      });
      if (lease === "retry") {
        await new Promise((r) => setTimeout(r, 1_000));
        continue;
      }
      if (!lease) return;
      o.log?.info({ lease: o.name }, "holding the writer lease: projecting");
      let term: T;
      const holding = new AbortController();
      try {
        term = await o.start(holding.signal);
      } catch (e) {
        lease.stop();
        throw e;
      }
      current = term;
      const why = await Promise.race([lease.lost, stopping]);
      // Not the writer any more: the writer's guard refuses every write from here on, even those of
      // a rebuild that `stop()` below would otherwise wait for while the next holder writes too.
      holding.abort();
      current = undefined;
      lease.stop();
      await term.stop();
      if (why !== "stopped") o.log?.info({ lease: o.name, why }, "writer lease lost: stopped writing, standing by");
    }
  })();
  return {
    get current() {
      return current;
    },
    done,
    async stop() {
      abort.abort();
      wakeStop();
      await done.catch(() => undefined);
    },
  };
}
