import { ids } from "./example-events.ts";

/** An idle runtime's heartbeat (2 workers, 4 slots free) as the JSON a runtime publishes: beat `n`, taken at `at`. */
export const idleBeat = (rt: string, n: number, at = new Date()): string =>
  JSON.stringify({
    type: "heartbeat",
    runtimeInstanceId: rt,
    hostIncarnation: ids.host,
    beat: n,
    at: at.toISOString(),
    workers: 2,
    activeWorkers: 0,
    availableWorkers: 2,
    queuedRuns: 0,
    runningRuns: 0,
    availableSlots: 4,
    paused: false,
    draining: false,
  });
