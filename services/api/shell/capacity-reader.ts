import type { JetStreamManager } from "@nats-io/jetstream";
import { JetStreamStatusError } from "@nats-io/jetstream/internal";
import type { CapacityDescriptor } from "../../../aggregates/capacity/descriptor.ts";
import { evolveCapacity, type RuntimeEvent } from "../../../aggregates/capacity/fold.ts";
import { Heartbeat, RuntimeInstanceId, decodeJson, isDroverError } from "../../../contracts/index.ts";
import type { StreamLayout } from "../../../streams/layout.ts";
import { heartbeatSubject } from "../../../streams/subjects.ts";
import type { EventStore } from "../../../streams/types.ts";
import { StoredEventUnreadable } from "./run-queries.ts";

/**
 * Where the API gets the runtimes it shows operators. One method, so the source can switch to the
 * capacity service's Redis view (platform/capacity-view.ts) without touching the routes.
 */
export interface CapacityReader {
  /** Every runtime's capacity descriptor, ordered by RuntimeInstanceId. */
  descriptors(): Promise<CapacityDescriptor[]>;
  /** Whether slot reservations are subtracted in what this source reports (false for the replay). */
  readonly includesReservations: boolean;
}

/**
 * Folds `<prefix>.runtime.>` with the shared capacity fold, then each runtime's last heartbeat. The
 * fold is kept between calls and each call folds only the events appended since the last one
 * (the fold is idempotent by sequence; calls are serialized), so a call costs O(new events +
 * runtimes), not O(runtime history). Rejects with the store's errors; an undecodable stored runtime
 * event is stepped over, as the capacity service does; an undecodable heartbeat counts as none.
 */
export function replayCapacityReader(store: EventStore, jsm: JetStreamManager, layout: StreamLayout): CapacityReader {
  const byId = new Map<string, CapacityDescriptor>();
  let folded = 0;
  let serial: Promise<unknown> = Promise.resolve();
  const catchUp = async () => {
    try {
      await store.replay(
        { seq: folded + 1 },
        ({ seq, subject, event }) => {
          folded = seq;
          const token = RuntimeInstanceId.safeParse(subject.slice(layout.eventPrefix.length + 1).split(".")[1]);
          if (!token.success || !event.type.startsWith("runtime.")) return;
          const id = token.data;
          byId.set(
            id,
            evolveCapacity(byId.get(id), { kind: "event", seq, runtimeInstanceId: id, event: event as RuntimeEvent }),
          );
        },
        // An undecodable runtime event is stepped over (the capacity service records it as a dead letter).
        { filter: `${layout.eventPrefix}.runtime.>`, onUndecodable: (u) => void (folded = u.seq) },
      );
    } catch (e) {
      throw isDroverError(e, "contract-violation") ? new StoredEventUnreadable(e) : e;
    }
  };
  return {
    includesReservations: false,
    async descriptors() {
      const caughtUp = serial.then(catchUp);
      serial = caughtUp.catch(() => undefined);
      await caughtUp;
      const folds = [...byId.values()];
      const beats = await Promise.all(folds.map((d) => lastHeartbeat(jsm, layout, d.runtimeInstanceId)));
      return folds
        .map((d, i) => {
          const beat = beats[i];
          return beat ? evolveCapacity(d, { kind: "heartbeat", beat }) : d;
        })
        .sort((a, b) => (a.runtimeInstanceId < b.runtimeInstanceId ? -1 : 1));
    },
  };
}

async function lastHeartbeat(
  jsm: JetStreamManager,
  layout: StreamLayout,
  runtimeInstanceId: string,
): Promise<Heartbeat | undefined> {
  try {
    const m = await jsm.direct.getMessage(layout.heartbeatStream, {
      last_by_subj: heartbeatSubject(layout, runtimeInstanceId),
    });
    return m ? decodeJson(Heartbeat, m.data, "heartbeat", { seq: m.seq, subject: m.subject }) : undefined;
  } catch (e) {
    if ((e instanceof JetStreamStatusError && e.code === 404) || isDroverError(e, "contract-violation"))
      return undefined;
    throw e;
  }
}
