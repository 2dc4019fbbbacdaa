import { createHash } from "node:crypto";
import { pino } from "pino";
import { afterEach, beforeEach, describe, expect, inject, it } from "vitest";
import { DroverConfig } from "../../contracts/index.ts";
import { detect, RecoveryState, type RecoveryDeps } from "../../services/recovery/index.ts";
import { createEventStore, runtimeRef, type EventStore } from "../../streams/index.ts";
import { mkEvent, readyProcessRuntime, writer } from "../support/recovery-fixture.ts";
import { eventually, freshStreams, type StreamsFixture } from "../support/streams.ts";

/**
 * A death the host proved is suspected without waiting for other runtimes' heartbeat checks (real
 * nats-server): one runtime's process exited (`host-exited` in the log), another looks silent and its
 * stream read of the last beat does not answer. The exited runtime's `suspected` is stored while that
 * read is still open; the silent one is judged once its read answers. Before, every suspicion of a
 * pass waited for every runtime's read.
 */
const CP = "cp-proven";
const config = DroverConfig.parse({ controlPlaneId: CP, heartbeatIntervalMs: 500 });

describe("health: a host-proven death is suspected at once, not behind other runtimes' heartbeat reads", () => {
  let fx: StreamsFixture, store: EventStore;
  beforeEach(async () => {
    fx = await freshStreams(inject("natsUrl"), "proven");
    store = createEventStore(fx.nc, fx.layout);
  });
  afterEach(async () => {
    await fx.close();
  });

  const suspected = async (rt: string) =>
    (await store.read(runtimeRef(rt))).events.some((e) => e.event.type === "runtime.suspected");

  it("stores the exited runtime's suspicion while a silent runtime's beat read is still open", async () => {
    const dead = await readyProcessRuntime(store, {
      controlPlaneId: CP,
      rt: "rt-dead",
      pid: 900001,
      tenantId: "t-a",
      incarnation: "pid:900001:1",
    });
    await readyProcessRuntime(store, {
      controlPlaneId: CP,
      rt: "rt-silent",
      pid: 900002,
      tenantId: "t-b",
      incarnation: "pid:900002:1",
    });
    await store.append(
      runtimeRef("rt-dead"),
      mkEvent(writer("test"), "runtime.host-exited", {
        hostIncarnation: dead,
        kind: "exited",
        exitCode: null,
        signal: "SIGKILL",
        detail: "exit observed by the test",
      }),
      { expectedSeq: (await store.read(runtimeRef("rt-dead"))).lastSeq },
    );
    const state = new RecoveryState(fx.layout.eventPrefix, () => undefined);
    await store.replay({ seq: 1 }, (e) => state.applyOwn(e.subject, e.event, e.seq));
    const deps: RecoveryDeps = {
      config,
      layout: fx.layout,
      store,
      state,
      env: { ...writer("test"), writer: { service: "recovery", instanceId: "recovery-1" } },
      hosts: () => undefined,
      sha256: (x) => createHash("sha256").update(x).digest("hex"),
      log: pino({ level: "silent" }),
    };
    let answer!: () => void;
    const reads: string[] = [];
    const latestBeat = (id: string) => {
      reads.push(id);
      return new Promise<void>((ok) => (answer = ok));
    };
    // Far past the staleness bound: rt-silent has never beaten.
    const judged = detect(deps, Date.now() + 60_000, 1_500, 0, latestBeat);
    await eventually(
      "rt-dead suspected while rt-silent's read is open",
      async () => ((await suspected("rt-dead")) ? true : undefined),
      30_000,
    );
    expect(reads).toEqual(["rt-silent"]);
    expect(await suspected("rt-silent")).toBe(false);
    answer();
    expect(await judged).toEqual([]);
    expect(await suspected("rt-silent")).toBe(true);
    const reasons = (await store.read(runtimeRef("rt-dead"))).events
      .filter((e) => e.event.type === "runtime.suspected")
      .map((e) => (e.event.data as { reason: { code: string } }).reason.code);
    expect(reasons).toEqual(["host-exited"]);
  });
});
