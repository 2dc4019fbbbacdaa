import type { ChildProcess } from "node:child_process";
import { createHash } from "node:crypto";
import { jetstream } from "@nats-io/jetstream";
import { pino } from "pino";
import { afterEach, beforeEach, describe, expect, inject, it } from "vitest";
import { DroverConfig, type DroverEvent } from "../../contracts/index.ts";
import { createProcessStrategy } from "../../platform/hosts/process-strategy.ts";
import { RecoveryState, startRecovery, type RecoveryService } from "../../services/recovery/index.ts";
import {
  aggregateWildcard,
  createEventStore,
  execRef,
  runRef,
  runtimeRef,
  type AggregateRef,
  type EventStore,
} from "../../streams/index.ts";
import { exampleDag } from "../support/example-events.ts";
import { mkEvent, readyProcessRuntime, startSleepHost, writer } from "../support/recovery-fixture.ts";
import { eventually, freshStreams, type StreamsFixture } from "../support/streams.ts";

/**
 * What recovery does side by side, against a real nats-server and real `sleep` hosts: a store
 * wrapper holds chosen reads back, so a test can see what else goes on while one waits.
 */
const CP = "cp-conc";
const config = DroverConfig.parse({ controlPlaneId: CP, heartbeatIntervalMs: 200, fenceDeadlineMs: 5000 });

describe("recovery concurrency: reconciles and reads that do not wait on one another (real NATS, real hosts)", () => {
  let fx: StreamsFixture, store: EventStore, hosts: ChildProcess[], services: RecoveryService[];
  const strategy = createProcessStrategy();

  beforeEach(async () => {
    fx = await freshStreams(inject("natsUrl"), "rconc");
    store = createEventStore(fx.nc, fx.layout);
    hosts = [];
    services = [];
  });
  afterEach(async () => {
    for (const s of services) await s.stop();
    for (const h of hosts) h.kill("SIGKILL");
    await fx.close();
  });

  async function recovery(reads: EventStore): Promise<void> {
    const s = await startRecovery({
      js: jetstream(fx.nc),
      config,
      layout: fx.layout,
      store: reads,
      state: new RecoveryState(fx.layout.eventPrefix, () => undefined),
      env: writer("test"),
      hosts: () => strategy,
      sha256: (x) => createHash("sha256").update(x).digest("hex"),
      log: pino({ level: "silent" }),
      tickMs: 50,
    });
    services.push(s);
    await s.ready;
  }

  /** The store, but a read of an aggregate `hold` names waits for `hold`'s promise (called with the read's wildcard). */
  const holding = (hold: (wildcard: string) => Promise<void> | undefined): EventStore => ({
    ...store,
    read: async (ref: AggregateRef, o) => {
      await hold(aggregateWildcard(fx.layout, ref));
      return store.read(ref, o);
    },
  });

  /** A runtime on a `sleep` host that has died, with `runs` started runs (each a 2-step journal). */
  async function deadRuntime(rt: string, tenant: string, runs = 1): Promise<string> {
    const host = await startSleepHost(hosts);
    const inc = await readyProcessRuntime(store, { controlPlaneId: CP, rt, pid: host.pid!, tenantId: tenant });
    host.kill("SIGKILL");
    await new Promise((ok) => host.once("exit", ok));
    for (let i = 0; i < runs; i++) await startedRun(rt, tenant, inc, i === 0 ? rt : `${rt}-${i}`);
    return inc;
  }

  /** Run `run-<name>` started on `rt` (local run `lr-<name>`, execution `exec-<name>` with one completed step). */
  async function startedRun(rt: string, tenant: string, inc: string, name: string): Promise<void> {
    const id = `run-${name}`;
    const lr = `lr-${name}`;
    const events: [DroverEvent["type"], unknown, ReturnType<typeof writer>][] = [
      ["run.submitted", { sharedRunId: id, dag: exampleDag, source: "api", labels: {} }, writer("admission")],
      [
        "run.admitted",
        { runtimeInstanceId: rt, localRunId: lr, reservationId: "r", candidates: [], recovery: false },
        writer("admission"),
      ],
      [
        "run.dispatched",
        { runtimeInstanceId: rt, localRunId: lr, transport: "http", hostIncarnation: inc },
        writer("admission"),
      ],
      ["run.started", { executionId: `exec-${name}`, localRunId: lr, runtimeInstanceId: rt }, writer("runtime", rt)],
    ];
    let seq = 0;
    for (const [type, data, c] of events)
      seq = (await store.append(runRef(tenant, id), mkEvent(c, type, data, tenant), { expectedSeq: seq })).seq;
    const c = writer("runtime", rt);
    const started = { sharedRunId: id, localRunId: lr, runtimeInstanceId: rt, dagDigest: "a".repeat(64), stepCount: 5 };
    const step = { stepId: "a", attempt: 1, output: {}, outputDigest: "b".repeat(64), durationMs: 1 };
    await store.appendAll(
      execRef(tenant, `exec-${name}`),
      [mkEvent(c, "exec.started", { ...started, epoch: 0 }, tenant), mkEvent(c, "exec.step-completed", step, tenant)],
      { expectedSeq: 0 },
    );
  }

  const exited = async (rt: string, inc: string) =>
    store.append(
      runtimeRef(rt),
      mkEvent(writer("test"), "runtime.host-exited", {
        hostIncarnation: inc,
        kind: "exited",
        exitCode: null,
        signal: "SIGKILL",
        detail: "",
      }),
      { expectedSeq: await store.lastSeq(runtimeRef(rt)) },
    );

  const typesOf = async (rt: string): Promise<string[]> => {
    const h = await store.read(runtimeRef(rt));
    return h.events.map((e) => e.event.type);
  };

  it("a runtime that fails while another's reconcile waits on the store is suspected, fenced and planned meanwhile", async () => {
    const incA = await deadRuntime("rt-a", "t-a");
    const incB = await deadRuntime("rt-b", "t-b");
    let release!: () => void;
    const released = new Promise<void>((ok) => (release = ok));
    let aWaiting = false;
    await recovery(
      holding((w) => {
        if (!w.includes(".run.t-a.")) return undefined;
        aWaiting = true;
        return released;
      }),
    );
    try {
      await exited("rt-a", incA);
      await eventually("rt-a's reconcile waiting on its run's read", async () => (aWaiting ? true : undefined));
      await exited("rt-b", incB);
      // rt-a's reconcile still waits: rt-b's incident goes through all the same.
      await eventually("rt-b planned", async () =>
        (await typesOf("rt-b")).includes("runtime.recovery-planned") ? true : undefined,
      );
      expect(await typesOf("rt-a")).not.toContain("runtime.recovery-planned");
    } finally {
      release();
    }
    await eventually("rt-a planned once its read is answered", async () =>
      (await typesOf("rt-a")).includes("runtime.recovery-planned") ? true : undefined,
    );
  });

  it("reads an in-flight item's run and execution journal side by side, not one after the other", async () => {
    const inc = await deadRuntime("rt-c", "t-c");
    let execAsked!: () => void;
    const execRead = new Promise<void>((ok) => (execAsked = ok));
    let runPending = false,
      overlapped = false;
    await recovery(
      holding(async (w) => {
        if (w.includes(".exec.t-c.")) {
          overlapped ||= runPending;
          execAsked();
          return;
        }
        if (!w.includes(".run.t-c.")) return;
        // The run's read is answered once the journal's was asked for, or after 5 s without it (a
        // loaded machine may take more than a second to issue the journal's read alongside).
        runPending = true;
        await Promise.race([execRead, new Promise<void>((ok) => setTimeout(ok, 5_000))]);
        runPending = false;
      }),
    );
    await exited("rt-c", inc);
    await eventually("rt-c planned", async () =>
      (await typesOf("rt-c")).includes("runtime.recovery-planned") ? true : undefined,
    );
    expect(overlapped).toBe(true);
  });

  /** The store, counting its atomic batches (each the number of aggregates in it); `before` runs ahead of each. */
  const counting = (batches: number[], before: () => Promise<void> = async () => undefined): EventStore => ({
    ...store,
    appendAtomic: async (entries) => {
      batches.push(entries.length);
      await before();
      return store.appendAtomic(entries);
    },
  });

  const lastTypes = async (tenant: string, names: string[]) =>
    Promise.all(
      names.map(async (n) => [
        (await store.read(runRef(tenant, `run-${n}`))).events.at(-1)?.event.type,
        (await store.read(execRef(tenant, `exec-${n}`))).events.at(-1)?.event.type,
      ]),
    );

  it("moves every in-flight execution of a fenced runtime in one atomic batch: each paused, requeued and recorded", async () => {
    const inc = await deadRuntime("rt-d", "t-d", 3);
    const batches: number[] = [];
    await recovery(counting(batches));
    await exited("rt-d", inc);
    await eventually("rt-d planned", async () =>
      (await typesOf("rt-d")).includes("runtime.recovery-planned") ? true : undefined,
    );
    // Three items, each its execution, run and forensics record: one batch of nine aggregates.
    expect(batches).toEqual([9]);
    expect(await lastTypes("t-d", ["rt-d", "rt-d-1", "rt-d-2"])).toEqual(
      Array(3).fill(["run.requeued-for-resume", "exec.paused-for-recovery"]),
    );
  });

  it("a run that moves before the batch commits leaves the batch unstored; each item then moves on its own", async () => {
    const inc = await deadRuntime("rt-e", "t-e", 3);
    const batches: number[] = [];
    let moved = false;
    await recovery(
      counting(batches, async () => {
        if (moved) return;
        moved = true;
        // A signal lands on one run after recovery read it: the batch's expectation for it is stale.
        const ref = runRef("t-e", "run-rt-e-1");
        const data = { name: "approval", by: "tenant:t-e:token:a", payload: {}, payloadDigest: "d".repeat(64) };
        await store.append(ref, mkEvent(writer("test"), "run.signal-received", data, "t-e"), {
          expectedSeq: await store.lastSeq(ref),
        });
      }),
    );
    await exited("rt-e", inc);
    await eventually("rt-e planned", async () =>
      (await typesOf("rt-e")).includes("runtime.recovery-planned") ? true : undefined,
    );
    expect(batches).toEqual([9, 3, 3, 3]);
    expect(await lastTypes("t-e", ["rt-e", "rt-e-1", "rt-e-2"])).toEqual(
      Array(3).fill(["run.requeued-for-resume", "exec.paused-for-recovery"]),
    );
  });
});
