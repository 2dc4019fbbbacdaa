import { describe, expect, it } from "vitest";
import { DroverError, type Step } from "../../../contracts/index.ts";
import type { AggregateHistory, EventStore, StoredEvent } from "../../../streams/types.ts";
import { EXAMPLE_BUILDERS, ids } from "../../../test/support/example-events.ts";
import type { OpenedExecution } from "./execution-open.ts";
import { runChild, type ChildRunHost } from "./child-runs.ts";

const step = { id: "child", kind: "run", params: {} } as unknown as Extract<Step, { kind: "run" }>;
const unansweredRead = () =>
  new DroverError("event-store-unavailable", "no history responder answered (no responders)", { retryable: true });

/** A child run that has failed: its submission, then `run.failed`. */
const failedChild: readonly StoredEvent[] = [
  { seq: 1, event: EXAMPLE_BUILDERS["run.submitted"]() } as StoredEvent,
  { seq: 2, event: EXAMPLE_BUILDERS["run.failed"]() } as StoredEvent,
];

/** The run step's host with its decision already journaled, so it only follows the child; `read` is the store's. */
function hostWith(read: () => Promise<AggregateHistory>, logged: Record<string, unknown>[]): ChildRunHost {
  const store = { read, lastSeq: async () => 2 } as unknown as EventStore;
  return {
    opened: { tenantId: ids.tenant, executionId: ids.execution } as unknown as OpenedExecution,
    port: { store, pollMs: 1, unansweredReadDelaysMs: [1, 2], log: (f) => logged.push(f) },
    children: new Map([["child", { attempt: 1, childRunId: "ignored" }]]),
  };
}

describe("a run step following its child run (in memory: an event store fake; proves no transport)", () => {
  it("outlasts reads of the child nobody answers (a provisioner restarting) instead of failing its attempt", async () => {
    let reads = 0;
    const logged: Record<string, unknown>[] = [];
    const host = hostWith(async () => {
      reads++;
      if (reads <= 3) throw unansweredRead();
      return { events: failedChild, lastSeq: 2 };
    }, logged);
    const ended = runChild(host, step, 1, { input: null, outputs: new Map() }, new AbortController().signal);
    // The child's own end is what fails the step, named, after the outage: not the unanswered read.
    await expect(ended).rejects.toMatchObject({ code: "child-run-failed" });
    expect(reads).toBe(5);
    expect(logged.filter((f) => f.event === "child-read-unanswered").map((f) => f.nextReadInMs)).toEqual([1, 2, 2]);
  });

  it("still fails its attempt on a read the server refuses (not an outage)", async () => {
    const refused = new DroverError("event-store-unavailable", "refused", { retryable: false });
    const host = hostWith(async () => Promise.reject(refused), []);
    await expect(
      runChild(host, step, 1, { input: null, outputs: new Map() }, new AbortController().signal),
    ).rejects.toBe(refused);
  });

  it("stops reading when the step is aborted during an outage", async () => {
    const abort = new AbortController();
    const host = hostWith(async () => {
      abort.abort();
      throw unansweredRead();
    }, []);
    await expect(runChild(host, step, 1, { input: null, outputs: new Map() }, abort.signal)).rejects.toMatchObject({
      name: "AbortError",
    });
  });
});
