import { describe, expect, it } from "vitest";
import {
  EventId,
  HostIncarnation,
  RuntimeInstanceId,
  type DroverEvent,
  type StoredHeartbeat,
} from "../../../contracts/index.ts";
import type { HostObservation } from "../../../platform/hosts/types.ts";
import { DEFAULT_LAYOUT, runtimeRef } from "../../../streams/index.ts";
import { exampleEvent } from "../../../test/support/example-events.ts";
import { MemoryEventStore } from "../../../test/support/memory-event-store.ts";
import type { ProvisionerDeps } from "./context.ts";
import { recordDrainedExit } from "./drained-exit.ts";
import { plannedStopIdOf } from "./stop-hosts.ts";

// In-memory store and a scripted last heartbeat: proves the decision and the conditional record
// only, no transport, process or JetStream behaviour (test/e2e/runtime-external-stop.e2e.test.ts does).
const RT = RuntimeInstanceId.parse("rt-xstop-000000000001");
const INC = "pid:4242:77";
let n = 0;
const ev = (e: DroverEvent): DroverEvent => ({ ...e, eventId: EventId.parse(`ev-xstop-${++n}`) }) as DroverEvent;

const POD_INC = "pod:0b7c2c1e-0000-4000-8000-000000000001";
const POD = { podUid: POD_INC.slice(4), podName: "drover-rt-xstop", namespace: "ns-xstop" };

async function registered(store: MemoryEventStore, pod = false): Promise<void> {
  const host = exampleEvent("runtime.host-started");
  const data = pod
    ? { hostIncarnation: HostIncarnation.parse(POD_INC), ...POD, convergence: "created" as const }
    : { hostIncarnation: HostIncarnation.parse(INC), pid: 4242, convergence: "created" as const };
  const events = [
    ev(exampleEvent("runtime.registered")),
    ev({ ...host, data }),
    ev(exampleEvent("runtime.capacity-published")),
  ];
  for (const e of events)
    await store.append(runtimeRef(RT), e, { expectedSeq: (await store.read(runtimeRef(RT))).lastSeq });
}

const beat = (over: Partial<StoredHeartbeat> = {}): StoredHeartbeat =>
  ({
    type: "heartbeat",
    runtimeInstanceId: RT,
    hostIncarnation: INC,
    beat: 9,
    at: "2026-01-02T03:00:00.000Z",
    workers: 1,
    activeWorkers: 0,
    availableWorkers: 1,
    queuedRuns: 0,
    runningRuns: 0,
    availableSlots: 0,
    paused: false,
    draining: true,
    ...over,
  }) as StoredHeartbeat;

const exited = (over: Partial<Extract<HostObservation, { kind: "exited" }>> = {}): HostObservation => ({
  kind: "exited",
  runtimeInstanceId: RT,
  hostIncarnation: INC,
  exitCode: 0,
  signal: null,
  ...over,
});

function deps(store: MemoryEventStore, last: StoredHeartbeat | undefined): ProvisionerDeps {
  return {
    store,
    layout: DEFAULT_LAYOUT,
    strategies: new Map(),
    instanceId: "prov-xstop",
    natsUrl: "nats://127.0.0.1:4222",
    clock: { now: () => new Date("2026-01-02T03:00:01.000Z") },
    newEventId: () => `ev-xstop-${++n}`,
    newSuffix: () => "000000000001",
    commandTokenFor: () => "t".repeat(32),
    probeBudgetMs: 1_000,
    killBudgetMs: 1_000,
    maxConcurrentHostStartups: 1,
    log: () => undefined,
    latestBeat: () => Promise.resolve(last),
  };
}

const types = async (store: MemoryEventStore) => (await store.read(runtimeRef(RT))).events.map((s) => s.event.type);

describe("a drained runtime's exit is a planned stop (in-memory store, scripted heartbeat; proves no transport)", () => {
  it("exit 0 with no signal after its own draining beat of that incarnation: retired with stopped, the exit as its proof", async () => {
    const store = new MemoryEventStore();
    await registered(store);
    expect(await recordDrainedExit(deps(store, beat()), exited())).toBe("retired");
    const last = (await store.read(runtimeRef(RT))).events.at(-1)?.event;
    expect(last?.type).toBe("runtime.retired");
    const stopped = last?.type === "runtime.retired" ? last.data.stopped : undefined;
    expect(stopped?.stopId).toBe(plannedStopIdOf(RT));
    expect(stopped?.reason.code).toBe("host-stopped");
    expect(stopped?.hostIncarnation).toBe(INC);
    expect(stopped?.proof).toEqual({ kind: "process-exit", pid: 4242, exitCode: 0, signal: null });
  });

  it("anything else is left to host-exited: a signal or another exit code, no draining beat, another incarnation's beat, no reader", async () => {
    const cases: [StoredHeartbeat | undefined, HostObservation][] = [
      [beat(), exited({ signal: "SIGKILL", exitCode: null })],
      [beat(), exited({ exitCode: 1 })],
      [beat({ draining: false }), exited()],
      [undefined, exited()],
      [beat({ hostIncarnation: HostIncarnation.parse("pid:4242:78") }), exited()],
    ];
    for (const [last, fact] of cases) {
      const store = new MemoryEventStore();
      await registered(store);
      expect(await recordDrainedExit(deps(store, last), fact)).toBe("not-drained");
      expect(await types(store)).not.toContain("runtime.retired");
    }
    const store = new MemoryEventStore();
    await registered(store);
    const { latestBeat: _, ...noReader } = deps(store, beat());
    expect(await recordDrainedExit(noReader, exited())).toBe("not-drained");
  });

  it("recovery's failure path first (suspected): the stop claims nothing and appends nothing", async () => {
    const store = new MemoryEventStore();
    await registered(store);
    const s = exampleEvent("runtime.suspected");
    await store.append(runtimeRef(RT), ev({ ...s, data: { ...s.data, hostIncarnation: HostIncarnation.parse(INC) } }), {
      expectedSeq: (await store.read(runtimeRef(RT))).lastSeq,
    });
    expect(await recordDrainedExit(deps(store, beat()), exited())).toBe("claimed");
    expect(await types(store)).not.toContain("runtime.retired");
  });
});

const podFact = (
  kind: "pod-deleted" | "container-terminated" | "pod-failed",
  exitCode: number | undefined = 0,
): HostObservation => ({
  kind,
  runtimeInstanceId: RT,
  hostIncarnation: POD_INC,
  detail: kind,
  ...(exitCode === undefined ? {} : { exitCode }),
});
const podBeat = (over: Partial<StoredHeartbeat> = {}) =>
  beat({ hostIncarnation: HostIncarnation.parse(POD_INC), ...over });

describe("a drained runtime Pod's deletion is a planned stop (in-memory store, scripted heartbeat and Pod facts; proves no transport)", () => {
  it("after an idle draining beat: container-terminated is deferred (nothing appended), pod-deleted retires it with the Pod UID gone as proof", async () => {
    const store = new MemoryEventStore();
    await registered(store, true);
    expect(await recordDrainedExit(deps(store, podBeat()), podFact("container-terminated"))).toBe("deferred");
    expect(await types(store)).not.toContain("runtime.retired");
    expect(await recordDrainedExit(deps(store, podBeat()), podFact("pod-deleted"))).toBe("retired");
    const last = (await store.read(runtimeRef(RT))).events.at(-1)?.event;
    const stopped = last?.type === "runtime.retired" ? last.data.stopped : undefined;
    expect(stopped?.stopId).toBe(plannedStopIdOf(RT));
    expect(stopped?.reason.code).toBe("host-stopped");
    expect(stopped?.hostIncarnation).toBe(POD_INC);
    expect(stopped?.proof).toEqual({ kind: "pod-uid-gone", ...POD, observedBy: "pod-watch" });
  });

  it("a Pod gone before its kubelet reported an exit code (a forced delete) is retired on the UID gone after an idle drain", async () => {
    const store = new MemoryEventStore();
    await registered(store, true);
    expect(await recordDrainedExit(deps(store, podBeat()), podFact("pod-deleted", undefined))).toBe("retired");
  });

  it("anything else is left to host-exited: a non-zero exit, pod-failed, a drain with runs left (mid-drain), no draining beat, another Pod's beat", async () => {
    const cases: [StoredHeartbeat | undefined, HostObservation][] = [
      [podBeat(), podFact("container-terminated", 137)],
      [podBeat(), podFact("pod-deleted", 1)],
      [podBeat(), podFact("pod-failed")],
      [podBeat({ runningRuns: 1 }), podFact("container-terminated")],
      [podBeat({ queuedRuns: 1 }), podFact("pod-deleted")],
      [podBeat({ draining: false }), podFact("pod-deleted")],
      [undefined, podFact("container-terminated")],
      [beat(), podFact("pod-deleted")],
    ];
    for (const [last, fact] of cases) {
      const store = new MemoryEventStore();
      await registered(store, true);
      expect(await recordDrainedExit(deps(store, last), fact)).toBe("not-drained");
      expect(await types(store)).not.toContain("runtime.retired");
    }
  });

  it("recovery's failure path first (suspected): container-terminated is not deferred and pod-deleted appends nothing", async () => {
    const store = new MemoryEventStore();
    await registered(store, true);
    const s = exampleEvent("runtime.suspected");
    await store.append(
      runtimeRef(RT),
      ev({ ...s, data: { ...s.data, hostIncarnation: HostIncarnation.parse(POD_INC) } }),
      { expectedSeq: (await store.read(runtimeRef(RT))).lastSeq },
    );
    expect(await recordDrainedExit(deps(store, podBeat()), podFact("container-terminated"))).toBe("claimed");
    expect(await recordDrainedExit(deps(store, podBeat()), podFact("pod-deleted"))).toBe("claimed");
    expect(await types(store)).not.toContain("runtime.retired");
  });
});
