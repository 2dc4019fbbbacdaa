import type { ChildProcess } from "node:child_process";
import { createHash } from "node:crypto";
import { jetstream, type JetStreamClient } from "@nats-io/jetstream";
import { pino } from "pino";
import { afterEach, beforeEach, describe, expect, inject, it } from "vitest";
import { DroverConfig, type DroverEvent } from "../../contracts/index.ts";
import { createProcessStrategy } from "../../platform/hosts/process-strategy.ts";
import type { HostStrategy } from "../../platform/hosts/types.ts";
import { RecoveryState, startRecovery, type RecoveryService } from "../../services/recovery/index.ts";
import { createEventStore, heartbeatSubject, type EventStore, type StoredEvent } from "../../streams/index.ts";
import { heartbeatJson, readyProcessRuntime, startSleepHost, writer } from "../support/recovery-fixture.ts";
import { eventually, freshStreams, type StreamsFixture } from "../support/streams.ts";

/**
 * No fencing storms (real nats-server, real host processes killed by the real process strategy):
 * when the whole fleet falls silent at once — what a NATS outage or a clock jump looks like from
 * recovery — heartbeat silence alone suspects at most `maxStaleSuspicionShare` of the live runtimes
 * at a time. The rest wait (counted through `onHeld`), are never suspected if they beat again, and
 * are taken a batch at a time if they stay silent. Each kill is slowed by 2 s (a slow Pod deletion)
 * so the open batch stays open long enough to be seen.
 */
const CP = "cp-storm";
const N = 6;
const SHARE = 0.34; // cap: max(1, floor(0.34 × 6)) = 2
const CAP = 2;
const config = DroverConfig.parse({
  controlPlaneId: CP,
  // Staleness 1.5 s (3 intervals), not 600 ms: the test's own beater awaits 6 publishes a round on
  // the test's loop, which a loaded machine may hold up long enough that a beating runtime looks silent.
  heartbeatIntervalMs: 500,
  fenceDeadlineMs: 10_000,
  maxStaleSuspicionShare: SHARE,
});

/** The process strategy with every kill held back `ms` first: the fence is real, only slower. */
function slowKills(real: HostStrategy, ms: number): HostStrategy {
  return {
    ...real,
    provider: real.provider,
    start: (...a) => real.start(...a),
    observe: (f) => real.observe(f),
    close: () => real.close(),
    kill: async (...a) => {
      await new Promise((r) => setTimeout(r, ms));
      return real.kill(...a);
    },
  };
}

describe("fence-storm cap: a silent fleet is fenced a bounded share at a time (real NATS, real host processes)", () => {
  let fx: StreamsFixture, js: JetStreamClient, store: EventStore, hosts: ChildProcess[], service: RecoveryService;
  let beating: Set<string>, beater: ReturnType<typeof setInterval>;
  const held: number[] = [];
  const incs = new Map<string, string>();

  beforeEach(async () => {
    fx = await freshStreams(inject("natsUrl"), "storm");
    js = jetstream(fx.nc);
    store = createEventStore(fx.nc, fx.layout);
    hosts = [];
    held.length = 0;
    for (let i = 0; i < N; i++) {
      const h = await startSleepHost(hosts);
      const rt = `rt-${i}`;
      incs.set(
        rt,
        await readyProcessRuntime(store, { controlPlaneId: CP, rt, pid: h.pid!, tenantId: "t-storm", endpoint: false }),
      );
    }
    let beat = 0;
    beating = new Set(incs.keys());
    const publish = async () => {
      beat += 1;
      for (const rt of beating)
        await js.publish(heartbeatSubject(fx.layout, rt), heartbeatJson(rt, incs.get(rt)!, beat));
    };
    await publish();
    beater = setInterval(() => void publish().catch(() => undefined), 100);
    service = await startRecovery({
      js,
      config,
      layout: fx.layout,
      store,
      state: new RecoveryState(fx.layout.eventPrefix, () => undefined),
      env: { ...writer("test"), writer: { service: "recovery", instanceId: "recovery-1" } },
      hosts: () => slowKills(createProcessStrategy(), 2_000),
      sha256: (x) => createHash("sha256").update(x).digest("hex"),
      log: pino({ level: "silent" }),
      tickMs: 50,
      onHeld: (h) => void held.push(h.length),
    });
    await service.ready;
  });
  afterEach(async () => {
    clearInterval(beater);
    await service?.stop();
    for (const h of hosts) h.kill("SIGKILL");
    await fx.close();
  });

  const log = async (): Promise<StoredEvent[]> => {
    const out: StoredEvent[] = [];
    await store.replay({ seq: 1 }, (e) => void out.push(e));
    return out;
  };
  const runtimeOf = (e: StoredEvent) => e.subject.split(".").at(-2)!;
  const ofType = (events: StoredEvent[], t: DroverEvent["type"]) =>
    events.filter((e) => e.event.type === t).map(runtimeOf);
  const alive = (i: number) => hosts[i]!.exitCode === null && hosts[i]!.signalCode === null;

  it("the whole fleet silent, then beating again: only the capped share is suspected and fenced; the held runtimes live on", async () => {
    await new Promise((r) => setTimeout(r, 2_000));
    expect(ofType(await log(), "runtime.suspected")).toEqual([]); // all beating: nothing
    beating.clear(); // the fleet falls silent at once
    await eventually("the first batch suspected", async () => {
      const s = ofType(await log(), "runtime.suspected");
      return s.length >= CAP ? s : undefined;
    });
    await eventually("the rest held by the cap", async () => (held.some((n) => n === N - CAP) ? true : undefined));
    const first = ofType(await log(), "runtime.suspected");
    expect(first).toHaveLength(CAP);
    // The silence was not death: the others beat again before the open batch is recovered.
    for (const rt of incs.keys()) if (!first.includes(rt)) beating.add(rt);
    await eventually(
      "the first batch fenced",
      async () => (ofType(await log(), "runtime.fenced").length === CAP ? true : undefined),
      15_000,
    );
    await new Promise((r) => setTimeout(r, 5_000)); // > 3 staleness bounds with the batch recovered
    const events = await log();
    expect(ofType(events, "runtime.suspected").sort()).toEqual([...first].sort());
    expect(ofType(events, "runtime.fenced").sort()).toEqual([...first].sort());
    const survivors = [...incs.keys()].filter((rt) => !first.includes(rt)).map((rt) => Number(rt.slice(3)));
    expect(survivors.every(alive)).toBe(true);
    expect(held.at(-1)).toBe(0); // nothing held any more
    console.log(JSON.stringify({ fleet: N, cap: CAP, suspected: first, heldPeak: Math.max(...held) }));
  }, 60_000);

  it("the whole fleet silent for good: every runtime is fenced in the end, never more than the cap under suspicion at once", async () => {
    beating.clear();
    await eventually(
      "all fenced",
      async () => (ofType(await log(), "runtime.fenced").length === N ? true : undefined),
      45_000,
    );
    const open = new Set<string>();
    let peak = 0;
    for (const e of await log()) {
      if (e.event.type === "runtime.suspected") open.add(runtimeOf(e));
      if (e.event.type === "runtime.recovery-planned") open.delete(runtimeOf(e));
      peak = Math.max(peak, open.size);
    }
    expect(peak).toBe(CAP);
    expect(hosts.every((_, i) => !alive(i))).toBe(true);
    expect(Math.max(...held)).toBe(N - CAP);
  }, 60_000);
});
