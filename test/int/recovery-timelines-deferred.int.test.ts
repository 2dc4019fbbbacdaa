import { createHash } from "node:crypto";
import { jetstream } from "@nats-io/jetstream";
import { pino } from "pino";
import { afterEach, beforeEach, describe, expect, inject, it } from "vitest";
import { DroverConfig } from "../../contracts/index.ts";
import { RecoveryState, startRecovery, type RecoveryService } from "../../services/recovery/index.ts";
import { createEventStore, forensicsRef, runRef, runtimeRef, type EventStore } from "../../streams/index.ts";
import { exampleEvent, forensicsIds, ids } from "../support/example-events.ts";
import { mkEvent, readyProcessRuntime, writer } from "../support/recovery-fixture.ts";
import { eventually, freshStreams, type StreamsFixture } from "../support/streams.ts";

/**
 * A pass that saw new changes goes back to detection before it advances the forensics timelines
 * (real nats-server, recovery's followers and passes). Runtime rt-a's exit is being suspected (its
 * append held by the test) when runtime rt-b's exit and a replacement placement of a recovered run
 * (a timeline fact due) are folded; the timeline's append never answers. rt-b's suspicion must be
 * stored anyway: before, the pass advanced the timelines first and waited on that append, so rt-b's
 * exit was not even judged.
 */
const CP = "cp-timelines";
const config = DroverConfig.parse({ controlPlaneId: CP, heartbeatIntervalMs: 500 });

describe("recovery: detection before forensics timelines when changes arrive mid-pass", () => {
  let fx: StreamsFixture, store: EventStore, service: RecoveryService | undefined;
  const releases: (() => void)[] = [];
  beforeEach(async () => {
    fx = await freshStreams(inject("natsUrl"), "tld");
    store = createEventStore(fx.nc, fx.layout);
  });
  afterEach(async () => {
    for (const r of releases) r();
    await service?.stop();
    await fx.close();
  });

  const exited = (inc: string) =>
    mkEvent(writer("test"), "runtime.host-exited", {
      hostIncarnation: inc,
      kind: "exited",
      exitCode: null,
      signal: "SIGKILL",
      detail: "exit observed by the test",
    });
  const suspected = async (rt: string) =>
    (await store.read(runtimeRef(rt))).events.some((e) => e.event.type === "runtime.suspected");

  it("stores a second exited runtime's suspicion while a due timeline fact's append is still open", async () => {
    const incA = await readyProcessRuntime(store, {
      controlPlaneId: CP,
      rt: "rt-a",
      pid: 900011,
      tenantId: "t-a",
      incarnation: "pid:900011:1",
    });
    const incB = await readyProcessRuntime(store, {
      controlPlaneId: CP,
      rt: "rt-b",
      pid: 900012,
      tenantId: "t-b",
      incarnation: "pid:900012:1",
    });
    // A recovered run's forensics record; its run has no placement yet, so no timeline fact is due.
    const detected = exampleEvent("forensics.execution-recovery-candidate-detected");
    await store.append(forensicsRef(ids.tenant, forensicsIds.inFlight), detected, { expectedSeq: 0 });

    // rt-a's suspicion is held until released; every forensics append never answers (until the end).
    let heldA!: () => void;
    const aHeld = new Promise<void>((ok) => (heldA = ok));
    let releaseA!: () => void;
    const aReleased = new Promise<void>((ok) => (releaseA = ok));
    releases.push(releaseA);
    let releaseF!: () => void;
    const fReleased = new Promise<void>((ok) => (releaseF = ok));
    releases.push(releaseF);
    let timelineAppends = 0;
    const held: EventStore = {
      ...store,
      append: async (ref, event, o) => {
        if (ref.aggregate === "runtime" && ref.id === "rt-a" && event.type === "runtime.suspected") {
          heldA();
          await aReleased;
        }
        return store.append(ref, event, o);
      },
      appendAll: async (ref, events, o) => {
        if (ref.aggregate === "forensics") {
          timelineAppends++;
          await fReleased;
        }
        return store.appendAll(ref, events, o);
      },
    };
    const state = new RecoveryState(fx.layout.eventPrefix, () => undefined);
    service = await startRecovery({
      js: jetstream(fx.nc),
      config,
      layout: fx.layout,
      store: held,
      state,
      env: { ...writer("test"), writer: { service: "recovery", instanceId: "recovery-1" } },
      // No host strategy: nothing is fenced (each suspected runtime is logged once as unfenceable).
      hosts: () => undefined,
      sha256: (x) => createHash("sha256").update(x).digest("hex"),
      log: pino({ level: "silent" }),
      tickMs: 50,
    });
    await service.ready;

    await store.append(runtimeRef("rt-a"), exited(incA), { expectedSeq: await store.lastSeq(runtimeRef("rt-a")) });
    await aHeld;
    // While rt-a's suspicion is being appended: rt-b exits, and the recovered run is placed on a
    // replacement (the timeline's `replacement-runtime-selected` is now due).
    await store.append(runtimeRef("rt-b"), exited(incB), { expectedSeq: await store.lastSeq(runtimeRef("rt-b")) });
    await store.append(
      runRef(ids.tenant, ids.sharedRun),
      mkEvent(
        writer("admission"),
        "run.admitted",
        {
          runtimeInstanceId: ids.replacementRuntime,
          localRunId: "lr-replacement",
          reservationId: "r",
          candidates: [],
          recovery: true,
        },
        ids.tenant,
      ),
      { expectedSeq: 0 },
    );
    await eventually("rt-b's exit and the placement folded", async () =>
      state.runtimes.get("rt-b")?.exited && state.runs.size > 0 ? true : undefined,
    );
    releaseA();

    await eventually(
      "rt-b suspected while the timeline's append is open",
      async () => ((await suspected("rt-b")) ? true : undefined),
      10_000,
    );
    expect(await suspected("rt-a")).toBe(true);
    // The timeline is advanced once nothing new arrives (its append is what the test holds).
    await eventually("timeline append attempted", async () => (timelineAppends > 0 ? true : undefined), 10_000);
  });
});
