import type { JetStreamManager } from "@nats-io/jetstream";
import { JetStreamStatusError } from "@nats-io/jetstream/internal";
import type { CapacityDescriptor } from "../../../aggregates/capacity/descriptor.ts";
import { evolveCapacity, type RuntimeEvent } from "../../../aggregates/capacity/fold.ts";
import { Heartbeat, decodeJson, isDroverError } from "../../../contracts/index.ts";
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
 * Folds `<prefix>.runtime.>` from sequence 1 with the shared capacity fold on every call, then
 * each runtime's last heartbeat. O(runtime history) per call: fine for an operator page, and the
 * reason it sits behind {@link CapacityReader}. Rejects with the store's errors; an undecodable
 * stored runtime event is `StoredEventUnreadable`; an undecodable heartbeat counts as none.
 */
export function replayCapacityReader(store: EventStore, jsm: JetStreamManager, layout: StreamLayout): CapacityReader {
  return {
    includesReservations: false,
    async descriptors() {
      const byId = new Map<string, CapacityDescriptor>();
      try {
        await store.replay({ seq: 1 }, ({ seq, subject, event }) => {
          const id = subject.slice(layout.eventPrefix.length + 1).split(".")[1];
          if (id === undefined || !event.type.startsWith("runtime.")) return;
          byId.set(id, evolveCapacity(byId.get(id), { kind: "event", seq, runtimeInstanceId: id, event: event as RuntimeEvent }));
        }, { filter: `${layout.eventPrefix}.runtime.>` });
      } catch (e) {
        throw isDroverError(e, "contract-violation") ? new StoredEventUnreadable(e) : e;
      }
      const beats = await Promise.all([...byId.keys()].map((id) => lastHeartbeat(jsm, layout, id)));
      return [...byId.values()]
        .map((d, i) => { const beat = beats[i]; return beat ? evolveCapacity(d, { kind: "heartbeat", beat }) : d; })
        .sort((a, b) => (a.runtimeInstanceId < b.runtimeInstanceId ? -1 : 1));
    },
  };
}

async function lastHeartbeat(jsm: JetStreamManager, layout: StreamLayout, runtimeInstanceId: string): Promise<Heartbeat | undefined> {
  try {
    const m = await jsm.direct.getMessage(layout.heartbeatStream, { last_by_subj: heartbeatSubject(layout, runtimeInstanceId) });
    return m ? decodeJson(Heartbeat, m.data, "heartbeat", { seq: m.seq, subject: m.subject }) : undefined;
  } catch (e) {
    if ((e instanceof JetStreamStatusError && e.code === 404) || isDroverError(e, "contract-violation")) return undefined;
    throw e;
  }
}
