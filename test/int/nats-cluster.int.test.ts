import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { jetstream, jetstreamManager, type JetStreamClient, type JetStreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { isDroverError } from "../../contracts/index.ts";
import { startNatsCluster, type NatsCluster } from "../../platform/nats-cluster.ts";
import { connectHarness } from "../../platform/nats-auth/server-keys.ts";
import { credentialOf } from "../../platform/nats-auth/credentials.ts";
import { connectNats } from "../../platform/nats-connect.ts";
import { ensureStreams } from "../../streams/ensure-streams.ts";
import { createEventStore } from "../../streams/event-store.ts";
import { memoryCheckpointStore } from "../../streams/checkpoints.ts";
import { createProjectionRunner } from "../../streams/projection-runner.ts";
import { taggedLayout, type StreamLayout } from "../../streams/layout.ts";
import { aggregateWildcard, execRef, runRef } from "../../streams/subjects.ts";
import type { EventStore } from "../../streams/types.ts";
import type { AggregateRef } from "../../streams/subjects.ts";
import { ids } from "../support/example-events.ts";
import { uniqueName } from "../support/isolation.ts";
import { event, eventually } from "../support/streams.ts";

/**
 * drover's write guarantees across a leader change of the event stream on a real 3-node
 * nats-server 2.15 JetStream cluster (R3 streams): OCC appends, atomic batches and msg-id dedupe,
 * after a forced step-down and after a SIGKILL of the leader's process (then its restart), and a
 * client connected to every seed publishing through the kill. The cluster is private to this file.
 */
describe("clustered JetStream (3 nodes, R3) across a leader change of the event stream", () => {
  let cluster: NatsCluster;
  let nc: NatsConnection;
  let jsm: JetStreamManager;
  let js: JetStreamClient;
  let layout: StreamLayout;
  let store: EventStore;

  beforeAll(async () => {
    cluster = await startNatsCluster({ size: 3 });
    nc = await connectHarness({ servers: cluster.url, maxReconnectAttempts: -1, reconnectTimeWait: 250 });
    jsm = await jetstreamManager(nc);
    js = jetstream(nc);
    layout = taggedLayout(uniqueName("cl"));
    await ensureStreams(jsm, layout, { replicas: 3 });
    store = createEventStore(nc, layout);
  }, 60_000);
  afterAll(async () => {
    await nc?.close();
    await cluster?.stop();
  });

  const leader = async (): Promise<string | undefined> =>
    (await jsm.streams.info(layout.eventStream).catch(() => undefined))?.cluster?.leader;
  /**
   * The stream takes writes again: a publish to a probe subject is stored. A new leader named by
   * STREAM.INFO may still answer a publish with 503 (no responders) or not at all while it takes
   * over; appends then fail `event-store-unavailable` (retryable), which is not what these checks
   * are about: they prove what holds once the new leader answers.
   */
  let probes = 0;
  const writable = () =>
    eventually(
      "the event stream taking writes",
      () =>
        js
          .publish(`${layout.eventPrefix}.probe.${++probes}`, "", { timeout: 2000 })
          .then(() => true)
          .catch(() => undefined),
      30_000,
    );
  const newLeader = async (old: string) => {
    const elected = await eventually(
      "a new event-stream leader",
      async () => {
        const l = await leader();
        return l && l !== old ? l : undefined;
      },
      30_000,
    );
    await writable();
    return elected;
  };

  /** What each check needs from before the change: aggregates at known sequences, a msg id stored. */
  async function before(tag: string) {
    await writable();
    const run = runRef(ids.tenant, `run-${tag}`);
    const exec = execRef(ids.tenant, `ex-${tag}`);
    const r = await store.append(run, event("run.submitted"), { expectedSeq: 0 });
    const e = await store.append(exec, event("exec.started"), { expectedSeq: 0 });
    const moved = event("run.queued-globally");
    const r2 = await store.append(run, moved, { expectedSeq: r.seq }); // r.seq is now stale
    const subject = `${layout.eventPrefix}.dedupe.${tag}`;
    const first = await js.publish(subject, "once", { msgID: `dedupe-${tag}` });
    return { run, exec, stale: r.seq, runSeq: r2.seq, execSeq: e.seq, moved, subject, first, tag };
  }

  async function checkAfter(b: Awaited<ReturnType<typeof before>>) {
    // (a) OCC: the stale expectation conflicts; re-sending the event that landed is its duplicate; a correct one succeeds.
    const stale = await store.append(b.run, event("run.cancelled"), { expectedSeq: b.stale }).catch((x: unknown) => x);
    expect(stale).toMatchObject({ code: "version-conflict" });
    expect(await store.append(b.run, b.moved, { expectedSeq: b.stale })).toEqual({ seq: b.runSeq, duplicate: true });
    const ok = await store.append(b.run, event("run.requeued-for-resume"), { expectedSeq: b.runSeq });
    expect(ok.duplicate).toBe(false);
    // (b) atomic batch: one stale entry stores nothing of the batch; a batch whose expectations hold stores all.
    // (Another client may append to other aggregates meanwhile: look at these two, not the stream's end.)
    const execBefore = await store.read(b.exec);
    const runBefore = await store.read(b.run);
    const refused = await store
      .appendAtomic([
        { ref: b.exec, expectedSeq: b.execSeq, events: [event("exec.paused-for-recovery"), event("exec.resumed")] },
        { ref: b.run, expectedSeq: b.runSeq, events: [event("run.requeued-for-resume")] },
      ])
      .catch((x: unknown) => x);
    expect(refused).toMatchObject({ code: "version-conflict" });
    expect(await store.read(b.exec)).toEqual(execBefore);
    expect(await store.read(b.run)).toEqual(runBefore);
    const stored = await store.appendAtomic([
      { ref: b.exec, expectedSeq: b.execSeq, events: [event("exec.paused-for-recovery"), event("exec.resumed")] },
      { ref: b.run, expectedSeq: ok.seq, events: [event("run.requeued-for-resume")] },
    ]);
    const first = stored[0]!.seq;
    expect(stored.map((a) => a.seq)).toEqual([first, first + 1, first + 2]);
    expect((await store.read(b.exec)).events.slice(-2).map((e) => e.seq)).toEqual([first, first + 1]);
    expect((await store.read(b.run)).lastSeq).toBe(first + 2);
    // (c) dedupe: the msg id stored before the change is still known; its duplicate is dropped.
    const again = await js.publish(b.subject, "twice", { msgID: `dedupe-${b.tag}` });
    expect(again).toMatchObject({ duplicate: true, seq: b.first.seq });
    expect((await jsm.streams.info(layout.eventStream, { subjects_filter: b.subject })).state.subjects).toEqual({
      [b.subject]: 1,
    });
  }

  it("creates every stream R3 with a leader and two current replicas, and a party without NATS_REPLICAS (a runtime) still verifies them", async () => {
    for (const name of [layout.eventStream, layout.heartbeatStream, layout.deadLetterStream]) {
      const info = await jsm.streams.info(name);
      expect(info.config.num_replicas).toBe(3);
      expect(info.cluster?.leader).toBeTruthy();
      await eventually(`${name} replicas current`, async () => {
        const r = (await jsm.streams.info(name)).cluster?.replicas ?? [];
        return r.length === 2 && r.every((p) => p.current) ? true : undefined;
      });
    }
    const verified = await ensureStreams(jsm, layout, {});
    expect(verified.map((i) => i.config.num_replicas)).toEqual([3, 3, 3]);
  });

  it("keeps OCC, atomic batches and msg-id dedupe after a $JS.API.STREAM.LEADER.STEPDOWN", async () => {
    const b = await before("sd");
    const old = (await leader())!;
    const reply = await nc.request(`$JS.API.STREAM.LEADER.STEPDOWN.${layout.eventStream}`, "", { timeout: 10_000 });
    expect(JSON.parse(reply.string())).toMatchObject({ success: true });
    expect(await newLeader(old)).not.toBe(old);
    await checkAfter(b);
  }, 60_000);

  it("keeps them after a SIGKILL of the leader's node and its restart, while a client on every seed keeps appending", async () => {
    const b = await before("kill");
    const old = (await leader())!;
    // The publisher is attached to the node that dies (its seed first, no shuffling): it must fail over.
    const killed = cluster.nodes.find((n) => n.name === old)!;
    const seeds = [
      `nats://127.0.0.1:${killed.port}`,
      ...cluster.url.split(",").filter((u) => !u.endsWith(`:${killed.port}`)),
    ];
    const svc = await connectNats({
      servers: seeds.join(","),
      creds: credentialOf(cluster.keys, "harness"),
      noRandomize: true,
      maxReconnectAttempts: -1,
      reconnectTimeWait: 250,
    });
    expect(svc.info?.server_name).toBe(old);
    const statuses: string[] = [];
    void (async () => {
      for await (const s of svc.status()) statuses.push(s.type);
    })();
    const svcStore = createEventStore(svc, layout);
    const agg: AggregateRef = runRef(ids.tenant, "run-through-kill");
    let stop = false;
    let retries = 0;
    let maxGapMs = 0;
    const appender = (async () => {
      let seq = 0;
      let n = 0;
      while (!stop || n < 20) {
        const ev = event(n === 0 ? "run.submitted" : "run.queued-globally");
        const t0 = Date.now();
        for (;;) {
          try {
            seq = (await svcStore.append(agg, ev, { expectedSeq: seq })).seq;
            break;
          } catch (e) {
            if (!isDroverError(e, "event-store-unavailable")) throw e;
            retries += 1;
            await new Promise((r) => setTimeout(r, 100));
          }
        }
        maxGapMs = Math.max(maxGapMs, Date.now() - t0);
        n += 1;
      }
      return n;
    })();
    await new Promise((r) => setTimeout(r, 500));
    await cluster.kill(old);
    const elected = await newLeader(old);
    expect(elected).not.toBe(old);
    await checkAfter(b);
    await cluster.restart(old);
    await eventually(
      "the restarted node current again",
      async () => {
        const info = await jsm.streams.info(layout.eventStream);
        return info.cluster?.replicas?.find((r) => r.name === old)?.current ? true : undefined;
      },
      30_000,
    );
    stop = true;
    const appended = await appender;
    const history = await store.read(agg);
    // Every append landed exactly once, in order, although the client's node died under it.
    expect(history.events).toHaveLength(appended);
    expect(new Set(history.events.map((e) => e.event.eventId)).size).toBe(appended);
    expect(statuses).toContain("reconnect");
    console.info(
      `nats-cluster: ${appended} appends through the kill, ${retries} retried, longest append ${maxGapMs} ms`,
    );
    await svc.close();
    // The restarted node holds the same stream (a replica again): a second step-down may elect it.
    const after = await jsm.streams.info(layout.eventStream);
    expect(after.cluster?.replicas?.map((r) => r.name).concat(after.cluster.leader ?? "")).toContain(old);
  }, 90_000);

  it("a live projection runner (reads in bursts) follows the event stream through a SIGKILL of the leader's node and its restart: every event applied once, in stream order", async () => {
    const old = (await leader())!;
    const killed = cluster.nodes.find((n) => n.name === old)!;
    // The runner's connection is on the node that dies, as the forensics projector's may be.
    const rc = await connectNats({
      servers: [
        `nats://127.0.0.1:${killed.port}`,
        ...cluster.url.split(",").filter((u) => !u.endsWith(`:${killed.port}`)),
      ].join(","),
      creds: credentialOf(cluster.keys, "harness"),
      noRandomize: true,
      maxReconnectAttempts: -1,
      reconnectTimeWait: 250,
    });
    const agg: AggregateRef = runRef(ids.tenant, "run-projected-through-kill");
    const applied: number[] = [];
    const restarts: string[] = [];
    // The forensics projector's linger windows (200 ms, held on up to 600 ms): a consumer info per window read.
    const runner = createProjectionRunner(
      rc,
      layout,
      { name: "through-kill", filter: aggregateWildcard(layout, agg), apply: (e) => void applied.push(e.seq) },
      memoryCheckpointStore(),
      { lingerMs: 200, maxLingerMs: 600, onRestart: (e) => restarts.push(String(e)) },
    );
    void runner.start();
    const appended: number[] = [];
    let stop = false;
    const appender = (async () => {
      for (let n = 0, seq = 0; !stop || n < 20; n++) {
        const ev = event(n === 0 ? "run.submitted" : "run.queued-globally");
        for (;;) {
          try {
            seq = (await store.append(agg, ev, { expectedSeq: seq })).seq;
            break;
          } catch (e) {
            if (!isDroverError(e, "event-store-unavailable")) throw e;
            await new Promise((r) => setTimeout(r, 100));
          }
        }
        appended.push(seq);
      }
    })();
    await eventually("the runner applying events before the kill", async () =>
      applied.length >= 3 ? true : undefined,
    );
    await cluster.kill(old);
    await newLeader(old);
    await cluster.restart(old);
    await eventually(
      "the restarted node current again",
      async () => {
        const info = await jsm.streams.info(layout.eventStream);
        return info.cluster?.replicas?.find((r) => r.name === old)?.current ? true : undefined;
      },
      30_000,
    );
    stop = true;
    await appender;
    await runner.waitFor(appended.at(-1)!, 60_000);
    expect(applied).toEqual(appended);
    await runner.stop();
    await expect(runner.done).resolves.toBeUndefined();
    console.info(
      `nats-cluster: ${appended.length} events projected through the kill, ${restarts.length} live restarts`,
    );
    await rc.close();
  }, 120_000);
});
