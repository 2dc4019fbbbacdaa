import type { DataOf, DroverEvent } from "../../contracts/index.ts";
import type { AggregateRef } from "../../streams/subjects.ts";
import type { Appended } from "../../streams/types.ts";
import { eventData } from "./event-data.ts";
import type { MemoryEventStore } from "./memory-event-store.ts";

/**
 * Recovery's `exec.paused-for-recovery`, appended to an opened execution's stream as the foreign
 * writer it is (epoch 1, failed runtime `rt-a`) at `expectedSeq`: the fence the runtime's unit
 * tests race their own appends against. Proves no transport (an in-memory store).
 */
export function appendRecoveryPause(
  store: MemoryEventStore,
  opened: {
    executionId: string;
    exec: { ref: AggregateRef };
    emit: (type: "exec.paused-for-recovery", data: DataOf<"exec.paused-for-recovery">) => DroverEvent;
  },
  expectedSeq: number,
): Promise<Appended> {
  return store.append(
    opened.exec.ref,
    opened.emit(
      "exec.paused-for-recovery",
      eventData("exec.paused-for-recovery", {
        forensicsId: `runtime-recovery:${opened.executionId}:r1:l1`,
        incidentId: "i1",
        failedRuntimeInstanceId: "rt-a",
        newEpoch: 1,
      }),
    ),
    { expectedSeq, msgId: "recovery" },
  );
}
