import { createHash } from "node:crypto";
import { jetstream, type JetStreamClient } from "@nats-io/jetstream";
import { pino } from "pino";
import { afterEach, beforeEach, describe, expect, inject, it } from "vitest";
import { DroverConfig, inFlightForensicsId, type EventType } from "../../contracts/index.ts";
import { randomIds, systemClock, type EnvelopeContext } from "../../platform/envelope.ts";
import { follow } from "../../platform/follow.ts";
import { restoreFromSnapshot, snapshotWriter } from "../../platform/snapshots/snapshotted.ts";
import { createSnapshotStore, snapshotStreamConfig, snapshotStreamOf } from "../../platform/snapshots/store.ts";
import { RecoveryState, startRecovery } from "../../services/recovery/index.ts";
import { createEventStore, forensicsRef, runtimeRef, type EventStore } from "../../streams/index.ts";
import { exampleEvent, ids } from "../support/example-events.ts";
import { uniqueName } from "../support/isolation.ts";
import { looseEvent } from "../support/loose-event.ts";
import { eventually, freshStreams, type StreamsFixture } from "../support/streams.ts";

/**
 * Recovery's bounds on retired runtimes and completed forensics records against a real nats-server
 * (the event stream, ordered consumers, the snapshot stream): memory holds the live ones and at most
 * the bound of finished ones; every record kept is the one the unbounded fold holds; a dropped
 * runtime that comes back (a late event) is read from the log before any pass decides about it,
 * and recovery appends nothing for it.
 */
const config = DroverConfig.parse({
  controlPlaneId: ids.controlPlane,
  heartbeatIntervalMs: 300,
  dispatchTimeoutMs: 500,
  tenants: [{ tenantId: ids.tenant, isolationMode: "dedicated" }],
});
const quiet = pino({ level: "silent" });
const writer = (service: "provisioner" | "recovery"): EnvelopeContext => ({
  writer: { service, instanceId: `${service}-1` },
  clock: systemClock,
  ids: randomIds,
});

describe("recovery's memory bounds (real NATS: the event stream, ordered consumers, the snapshot stream)", () => {
  let fx: StreamsFixture, js: JetStreamClient, store: EventStore;
  beforeEach(async () => {
    fx = await freshStreams(inject("natsUrl"), "rcb");
    js = jetstream(fx.nc);
    store = createEventStore(fx.nc, fx.layout);
    await fx.jsm.streams.add(snapshotStreamConfig(fx.layout));
  });
  afterEach(async () => {
    await fx.jsm.streams.delete(snapshotStreamOf(fx.layout)).catch(() => undefined);
    await fx.close();
  });

  const ev = (service: "provisioner" | "recovery", type: EventType, data: unknown, tenantId?: string) =>
    looseEvent(writer(service), type, data, { tenantId, correlationId: "bounds", causationId: "test" });
  /** Runtimes `rt-bound-<n>`: registered, and retired when `retire`. */
  async function runtimes(from: number, count: number, retire: boolean) {
    for (let n = from; n < from + count; n++) {
      const events = [ev("provisioner", "runtime.registered", exampleEvent("runtime.registered").data)];
      if (retire) events.push(ev("provisioner", "runtime.retired", { reason: "drained" }));
      await store.appendAll(runtimeRef(`rt-bound-${n}`), events, { expectedSeq: 0 });
    }
  }
  /** Forensics records of executions `ex-b<n>`: detected, and completed when `complete`. */
  async function records(from: number, count: number, complete: boolean) {
    for (let n = from; n < from + count; n++) {
      const forensicsId = inFlightForensicsId(`ex-b${n}` as never, ids.sharedRun, ids.localRun);
      const detected = exampleEvent("forensics.execution-recovery-candidate-detected").data;
      const type = "forensics.execution-recovery-candidate-detected";
      const events = [ev("recovery", type, { ...detected, forensicsId, executionId: `ex-b${n}` }, ids.tenant)];
      if (complete)
        events.push(
          ev(
            "recovery",
            "forensics.execution-recovery-completed",
            { ...exampleEvent("forensics.execution-recovery-completed").data, forensicsId, executionId: `ex-b${n}` },
            ids.tenant,
          ),
        );
      await store.appendAll(forensicsRef(ids.tenant, forensicsId), events, { expectedSeq: 0 });
    }
  }
  const p = () => fx.layout.eventPrefix;
  const filters = () => [`${p()}.run.>`, `${p()}.runtime.>`, `${p()}.forensics.>`];
  const bounded = (max = 2) => {
    const s = new RecoveryState(p(), () => undefined);
    s.retired.maxRuntimes = max;
    s.retired.maxForensics = max;
    return s;
  };
  async function fold(state: RecoveryState) {
    const f = await follow(js, { stream: fx.layout.eventStream, filters: filters(), fromSeq: 1 }, (m) =>
      state.apply(m),
    );
    await f.caughtUp;
    await f.stop();
    return state;
  }

  it("keeps the live runtimes and open records plus at most the bound of finished ones; a dropped runtime that comes back is read from the log first", async () => {
    await runtimes(0, 6, true);
    await runtimes(100, 1, false);
    await records(0, 5, true);
    await records(100, 1, false);
    const state = bounded();
    const s = await startRecovery({
      js,
      config,
      layout: fx.layout,
      store,
      state,
      env: { writer: { service: "recovery", instanceId: uniqueName("rec") }, clock: systemClock, ids: randomIds },
      hosts: () => undefined,
      sha256: (x) => createHash("sha256").update(x).digest("hex"),
      log: quiet,
      tickMs: 50,
    });
    try {
      await s.ready;
      expect([...state.runtimes.keys()].sort()).toEqual(["rt-bound-100", "rt-bound-4", "rt-bound-5"]);
      expect(state.retired.droppedRuntimes).toBe(4);
      expect(state.forensics.size).toBe(2 + 1);
      expect(state.retired.droppedForensics).toBe(3);
      const full = await fold(new RecoveryState(p(), () => undefined));
      expect(full.runtimes.size).toBe(7);
      for (const [id, rt] of state.runtimes) expect(rt).toEqual(full.runtimes.get(id));
      for (const [id, f] of state.forensics) expect(f).toEqual(full.forensics.get(id));

      // A late event of dropped rt-bound-0 (its host's exit recorded after it was retired).
      const before = await store.lastSeq(runtimeRef("rt-bound-0"));
      const late = ev("provisioner", "runtime.host-exited", exampleEvent("runtime.host-exited").data);
      const lateSeq = (await store.append(runtimeRef("rt-bound-0"), late, { expectedSeq: before })).seq;
      const fullAfter = await fold(new RecoveryState(p(), () => undefined));
      // Read back whole (registered, retired, exited), not a fresh record of one event; then it is the
      // latest finished runtime and the oldest other one leaves instead.
      await eventually("rt-bound-0 read back from the log", async () =>
        state.runtimes.get("rt-bound-0")?.registration && state.retired.unverified.size === 0 ? true : undefined,
      );
      expect(state.runtimes.get("rt-bound-0")).toEqual(fullAfter.runtimes.get("rt-bound-0"));
      expect([...state.runtimes.keys()].sort()).toEqual(["rt-bound-0", "rt-bound-100", "rt-bound-5"]);
      expect(state.retired.droppedRuntimes).toBe(5);
      // Passes run every 50 ms: several of them see the runtime read back, and none appends to it.
      await new Promise((r) => setTimeout(r, 500));
      expect(await store.lastSeq(runtimeRef("rt-bound-0"))).toBe(lateSeq);
    } finally {
      await s.stop();
    }
  });

  it("a snapshot of the bounded state restores the same state, bounds and drop counts included", async () => {
    await runtimes(0, 5, true);
    await records(0, 4, true);
    const snaps = createSnapshotStore(fx.nc, fx.layout, "recovery");
    const state = bounded();
    const w = snapshotWriter(snaps, state, { everyEvents: 1e9, everyMs: 1e9 }, systemClock, {
      log: quiet,
      startSeq: 0,
    });
    await fold(state);
    w.applied((await fx.jsm.streams.info(fx.layout.eventStream)).state.last_seq);
    await w.flush();
    await w.stop();
    const restored = bounded();
    const r = await restoreFromSnapshot(snaps, restored, { log: quiet });
    expect(r.restoredSeq).toBeGreaterThan(0);
    expect(new TextDecoder().decode(restored.encode())).toBe(new TextDecoder().decode(state.encode()));
    expect(restored.runtimes.size).toBe(2);
    expect(restored.retired.droppedRuntimes).toBe(3);
    expect(restored.retired.droppedForensics).toBe(2);
  });
});
