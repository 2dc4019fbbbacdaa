import { jetstream } from "@nats-io/jetstream";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { acquireLease, LEASE_TTL_MS, leasePrefixOf, leaseStreamConfig, leaseStreamOf } from "../../platform/lease.ts";
import { runAsSingleWriter } from "../../services/forensics/index.ts";
import { uniqueName } from "../support/isolation.ts";
import { attempt, authFixture, type AuthFixture } from "../support/nats-auth-fixture.ts";
import { eventually, freshStreams, type StreamsFixture } from "../support/streams.ts";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("single-writer leases (boundary: real nats-server JetStream, conditional publishes on the lease stream)", () => {
  let f: StreamsFixture;
  beforeAll(async () => {
    f = await freshStreams(inject("natsUrl"), "lease");
    await f.jsm.streams.add(leaseStreamConfig(f.layout));
  });
  afterAll(async () => {
    await f.jsm.streams.delete(leaseStreamOf(f.layout)).catch(() => undefined);
    await f.close();
  });

  it("one holder at a time: a second replica stands by and takes over once the holder stops renewing (the TTL)", async () => {
    const js = jetstream(f.nc);
    const key = { service: "forensics", name: uniqueName("db") };
    const a = await acquireLease(js, f.layout, key, "replica-a");
    expect(a).toBeDefined();
    let standby = 0;
    const t0 = Date.now();
    const b = acquireLease(js, f.layout, key, "replica-b", { everyMs: 200, onStandby: () => standby++ });
    await sleep(LEASE_TTL_MS + 1_000);
    // a renews every TTL/5: b is still waiting after more than a TTL.
    expect(standby).toBe(1);
    expect(await Promise.race([b.then(() => "taken"), sleep(10).then(() => "waiting")])).toBe("waiting");
    a!.stop();
    const held = await b;
    const tookMs = Date.now() - t0;
    expect(held).toBeDefined();
    expect(tookMs).toBeGreaterThan(LEASE_TTL_MS + 1_000);
    expect(await a!.lost).toBe("stopped");
    held!.stop();
  }, 30_000);

  it("a holder that stalled past the TTL loses the lease to the replica that took it: its late renewal fails", async () => {
    const js = jetstream(f.nc);
    const key = { service: "forensics", name: uniqueName("db") };
    // Renewing every 7 s with a 5 s TTL: the lease ages out before the first renewal, like a paused process.
    const stalled = await acquireLease(js, f.layout, key, "stalled", { everyMs: LEASE_TTL_MS + 2_000 });
    const taker = await acquireLease(js, f.layout, key, "taker", { everyMs: 200 });
    expect(taker).toBeDefined();
    expect(await stalled!.lost).toBe("another replica holds the lease");
    // The taker keeps it: its renewals still find its own last sequence.
    await sleep(1_000);
    expect(await Promise.race([taker!.lost, sleep(10).then(() => "held")])).toBe("held");
    taker!.stop();
  }, 30_000);

  it("runAsSingleWriter runs one writer of two replicas and hands over when the writer's replica stops", async () => {
    const js = jetstream(f.nc);
    const name = uniqueName("db");
    const running = new Set<string>();
    const overlaps: string[] = [];
    const standingBy = new Set<string>();
    const replica = (id: string) =>
      runAsSingleWriter({
        js,
        layout: f.layout,
        name,
        holder: id,
        log: { info: (_, msg) => void (msg.startsWith("standing by") && standingBy.add(id)) },
        start: async () => {
          if (running.size > 0) overlaps.push(`${id} started while ${[...running].join()} ran`);
          running.add(id);
          return { stop: async () => void running.delete(id) };
        },
      });
    const one = replica("one");
    // Waits on states, not on fixed sleeps a loaded machine may outlast: one writes, then two found the lease held.
    await eventually("one writing", async () => (one.current ? true : undefined));
    const two = replica("two");
    await eventually("two standing by", async () => (standingBy.has("two") ? true : undefined));
    expect([...running]).toEqual(["one"]);
    expect(one.current).toBeDefined();
    expect(two.current).toBeUndefined();
    await one.stop();
    await eventually("two writing", async () => (two.current ? true : undefined), LEASE_TTL_MS + 10_000);
    expect([...running]).toEqual(["two"]);
    expect(overlaps).toEqual([]);
    await two.stop();
    expect(running.size).toBe(0);
  }, 30_000);
});

describe("lease rights (boundary: real nats-server authorization)", () => {
  let fx: AuthFixture;
  beforeAll(async () => {
    // The setup identity makes the lease stream with the others (platform/nats-setup.ts).
    fx = await authFixture(inject("natsUrl"), 60_000);
  });
  afterAll(async () => {
    const jsm = await jetstream(fx.f.nc).jetstreamManager();
    await jsm.streams.delete(leaseStreamOf(fx.f.layout)).catch(() => undefined);
    await fx.close();
  });

  it("forensics may take its own service's leases; capacity, admission and the api may not publish there at all", async () => {
    const subject = `${leasePrefixOf(fx.f.layout)}.forensics.${uniqueName("db")}`;
    // Stored: JetStream answers the publish with its ack (stream and sequence).
    expect(await attempt(await fx.as("forensics"), subject, "holder")).toMatch(/^answered: .*"seq":1/);
    for (const id of ["capacity", "admission", "api"] as const)
      expect(await attempt(await fx.as(id), subject, "holder"), id).toBe("refused");
    expect(await attempt(await fx.as("forensics"), `${leasePrefixOf(fx.f.layout)}.capacity.x`, "h")).toBe("refused");
  }, 60_000);
});
