import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import type { DroverEvent } from "../../contracts/index.ts";
import type { HostStrategy, WarmPoolHost } from "../../platform/hosts/types.ts";
import { gateStarts } from "../support/gate-starts.ts";
import { scaleOutRef } from "../../streams/index.ts";
import { claimableMembers, RosterView } from "../../services/provisioner/index.ts";
import { uniqueName } from "../support/isolation.ts";
import {
  firstSlotOf,
  provisionerFixture,
  type ProvisionerFixture,
  fulfilledRuntime,
  hostStartedData,
} from "../support/provisioner-fixture.ts";
import { eventually } from "../support/streams.ts";
import { claimStart, readyMembers } from "../support/warm-pool-members.ts";

// Real nats-server, real runtime processes (pooled, then bound), the real process strategy.
let f: ProvisionerFixture;
beforeAll(async () => {
  f = await provisionerFixture(inject("natsUrl"));
});
afterAll(async () => {
  await f?.close();
});

const types = (events: readonly { event: DroverEvent }[]) => events.map((s) => s.event.type);
/** The real strategy behind a gate on its cold start only (support/gate-starts.ts); `canBind` false when `noBind`. */
const gateColdStarts = (held: Promise<void>, onStart: () => void, noBind = false) =>
  gateStarts({ cold: { held, onStart }, noBind });
describe("warm pool with process hosts (real NATS, real runtime processes)", () => {
  it("serves a scale-out from the pool (claim, bind, command proven again, capacity) and refills it; pool size 0 cold-starts", async () => {
    const cp = uniqueName("cp");
    const cold = f.provisioner();
    const coldReq = await f.request("tenant-cold", cp);
    await cold.provisioner.handle(coldReq);
    const coldRt = await f.runtimeEvents(
      fulfilledRuntime(await f.settled("tenant-cold", coldReq.event.correlationId))!,
    );
    const coldMs = coldRt.at(-1)!.time.getTime() - coldReq.time.getTime();

    const { provisioner, strategy } = f.provisioner({ poolSizes: { process: 2 }, controlPlaneId: cp });
    provisioner.pool.refill();
    const members = await readyMembers(f, 2, strategy);
    const requested = await f.request("tenant-warm", cp);
    await provisioner.handle(requested);
    const id = fulfilledRuntime(await f.settled("tenant-warm", requested.event.correlationId))!;
    const rt = await f.runtimeEvents(id);
    expect(types(rt)).toEqual([
      "runtime.registered",
      "runtime.host-start-requested",
      "runtime.host-started",
      "runtime.readiness-layer-passed",
      "runtime.readiness-layer-passed",
      "runtime.readiness-layer-passed",
      "runtime.readiness-layer-passed",
      "runtime.endpoint-published",
      "runtime.capacity-published",
    ]);
    expect(hostStartedData(rt)?.convergenceSource).toMatch(/^warm-pool:pool-[a-z0-9]{12}$/);
    const memberId = hostStartedData(rt)!.convergenceSource!.slice("warm-pool:".length);
    // The member's resource and host layers come with its claim (one batch with host-started, the
    // same incarnation); the bind proves endpoint, the probe command, then capacity.
    const layers = rt.flatMap((s) => (s.event.type === "runtime.readiness-layer-passed" ? [s.event.data] : []));
    expect(layers.map((l) => l.layer)).toEqual(["resource", "host", "endpoint", "command"]);
    for (const l of layers) expect(l.hostIncarnation).toBe(hostStartedData(rt)!.hostIncarnation);
    expect(layers.slice(0, 2).map((l) => l.detail)).toEqual([
      expect.stringContaining(`warm pool member ${memberId}: resource proven at its readiness`),
      expect.stringContaining(`warm pool member ${memberId}: host proven at its readiness`),
    ]);
    expect(members.map((m) => m.runtimeInstanceId)).toContain(memberId);
    expect(types(await f.runtimeEvents(memberId))).toContain("runtime.pool-member-claimed");
    const warmMs = rt.at(-1)!.time.getTime() - requested.time.getTime();
    console.log(`[warm-pool] scale-out request→capacity-published: cold ${coldMs} ms, warm ${warmMs} ms`);
    const refilled = await readyMembers(f, 2, strategy);
    expect(refilled.map((m) => m.runtimeInstanceId)).not.toContain(memberId);
  }, 240_000);

  it("two concurrent claims of the one ready member: exactly one wins (the member is reserved while its conditional batch is in flight), the other gets nothing (cold start)", async () => {
    const cp = uniqueName("cp");
    const { provisioner, strategy } = f.provisioner({ poolSizes: { process: 1 }, controlPlaneId: cp });
    provisioner.pool.refill();
    await readyMembers(f, 1, strategy);
    const reg = (tenantId: string, suffix: string) => claimStart(cp, tenantId, `rt-${tenantId}-${suffix}`);
    const claims = await Promise.all([
      provisioner.pool.claim(reg("race-a", "aaaaaaaaaaaa") as never, firstSlotOf("race-a")),
      provisioner.pool.claim(reg("race-b", "bbbbbbbbbbbb") as never, firstSlotOf("race-b")),
    ]);
    expect(claims.filter((c) => c !== undefined)).toHaveLength(1);
    const winner = claims.find((c) => c !== undefined)!;
    const member = await f.runtimeEvents(winner.warm!.memberId);
    expect(types(member).filter((t) => t === "runtime.pool-member-claimed")).toHaveLength(1);
    const loserId = claims[0] ? "rt-race-b-bbbbbbbbbbbb" : "rt-race-a-aaaaaaaaaaaa";
    expect(await f.runtimeEvents(loserId)).toEqual([]);
  }, 240_000);

  it("a runtime that served tenant A is never bound to tenant B, even after A's runtime retired", async () => {
    const cp = uniqueName("cp");
    const { provisioner, strategy } = f.provisioner({ poolSizes: { process: 1 }, controlPlaneId: cp });
    provisioner.pool.refill();
    await readyMembers(f, 1, strategy);
    const a = await f.request("tenant-a", cp);
    await provisioner.handle(a);
    const aId = fulfilledRuntime(await f.settled("tenant-a", a.event.correlationId))!;
    const aHost = hostStartedData(await f.runtimeEvents(aId))!;
    const aMember = aHost.convergenceSource!.slice("warm-pool:".length);
    await provisioner.pool.idle();
    const b = await f.request("tenant-b", cp);
    await readyMembers(f, 1, strategy);
    await provisioner.handle(b);
    const bHost = hostStartedData(
      await f.runtimeEvents(fulfilledRuntime(await f.settled("tenant-b", b.event.correlationId))!),
    )!;
    expect(bHost.convergenceSource).toMatch(/^warm-pool:/);
    expect(bHost.convergenceSource).not.toBe(aHost.convergenceSource);
    expect(bHost.hostIncarnation).not.toBe(aHost.hostIncarnation);
    const roster = await new RosterView(f.store, f.streams.layout).current();
    expect(claimableMembers(roster, "process").map((m) => m.runtimeInstanceId)).not.toContain(aMember);
  }, 240_000);

  it("a bind that fails cold-starts instead, and the request is settled once, fulfilled by the cold runtime", async () => {
    const cp = uniqueName("cp");
    // The member is real and ready; its bind is refused by a strategy in front of the real one.
    const refusingBind = (s: HostStrategy): HostStrategy & WarmPoolHost => ({
      ...(s as HostStrategy & WarmPoolHost),
      bind: async () => ({
        outcome: "rejected",
        reason: { code: "endpoint-resolution-failed", detail: "bind refused by the test" },
        layer: "endpoint",
        owned: [],
      }),
    });
    const { provisioner, strategy } = f.provisioner(
      { poolSizes: { process: 1 }, controlPlaneId: cp },
      {},
      refusingBind,
    );
    provisioner.pool.refill();
    await readyMembers(f, 1, strategy);
    const requested = await f.request("tenant-bindfail", cp);
    await provisioner.handle(requested);
    // Before the fix the handler's second `observed` made settle() read its own takeover as another
    // handler's: nothing was written and the request stayed open for ever.
    const events = await f.settled("tenant-bindfail", requested.event.correlationId, 30_000);
    const outcomes = types(events).filter((t) =>
      ["scaleout.fulfilled", "scaleout.rejected", "scaleout.expired"].includes(t),
    );
    expect(outcomes).toEqual(["scaleout.fulfilled"]);
    expect(types(events).filter((t) => t === "scaleout.observed")).toHaveLength(2);
    const rt = await f.runtimeEvents(fulfilledRuntime(events)!);
    expect(hostStartedData(rt)?.convergenceSource ?? "cold").not.toMatch(/^warm-pool:/);
    expect(types(rt)).toContain("runtime.capacity-published");
  }, 240_000);

  it("a pool member SIGKILLed while unbound never gets capacity and is replaced in the pool", async () => {
    const cp = uniqueName("cp");
    const { provisioner, strategy } = f.provisioner({ poolSizes: { process: 1 }, controlPlaneId: cp });
    provisioner.pool.refill();
    const [victim] = await readyMembers(f, 1, strategy);
    process.kill(victim!.pid!, "SIGKILL");
    await eventually("host-exited recorded", async () =>
      types(await f.runtimeEvents(victim!.runtimeInstanceId)).includes("runtime.host-exited") ? true : undefined,
    );
    const replacement = await readyMembers(f, 1, strategy);
    expect(replacement.map((m) => m.runtimeInstanceId)).not.toContain(victim!.runtimeInstanceId);
    expect(types(await f.runtimeEvents(victim!.runtimeInstanceId))).not.toContain("runtime.capacity-published");
  }, 240_000);

  it("a warm bind does not wait for a host start slot: a claim is served while a cold start holds the only slot", async () => {
    const cp = uniqueName("cp");
    let release = () => undefined as void;
    const held = new Promise<void>((r) => (release = r));
    let coldStarts = 0;
    const gated = gateColdStarts(held, () => void coldStarts++);
    const { provisioner, strategy } = f.provisioner(
      { poolSizes: { process: 1 }, controlPlaneId: cp, maxConcurrentHostStartups: 1 },
      {},
      gated,
    );
    // No member yet: this request cold-starts and holds the one slot until released.
    const cold = await f.request("tenant-slot-cold", cp);
    const coldDone = provisioner.handle(cold);
    await eventually("the cold start holds the slot", async () => (coldStarts === 1 ? true : undefined));
    provisioner.pool.refill();
    await readyMembers(f, 1, strategy);
    const warm = await f.request("tenant-slot-warm", cp);
    await provisioner.handle(warm);
    const warmRt = await f.runtimeEvents(
      fulfilledRuntime(await f.settled("tenant-slot-warm", warm.event.correlationId))!,
    );
    expect(hostStartedData(warmRt)?.convergenceSource).toMatch(/^warm-pool:pool-[a-z0-9]{12}$/);
    expect(types(warmRt).at(-1)).toBe("runtime.capacity-published");
    // The cold start was still held all along: nothing of it is published yet.
    expect(
      types(await f.store.read(scaleOutRef("tenant-slot-cold", cold.event.correlationId)).then((h) => h.events)),
    ).not.toContain("scaleout.fulfilled");
    release();
    await coldDone;
    const coldRt = await f.runtimeEvents(
      fulfilledRuntime(await f.settled("tenant-slot-cold", cold.event.correlationId))!,
    );
    expect(hostStartedData(coldRt)?.convergence).toBe("created");
  }, 240_000);

  it("a request waiting for the only start slot takes a member that becomes ready meanwhile, never registering a cold runtime", async () => {
    const cp = uniqueName("cp");
    let release = () => undefined as void;
    const held = new Promise<void>((r) => (release = r));
    let coldStarts = 0;
    const gated = gateColdStarts(held, () => void coldStarts++);
    const { provisioner } = f.provisioner(
      { poolSizes: { process: 1 }, controlPlaneId: cp, maxConcurrentHostStartups: 1 },
      {},
      gated,
    );
    const cold = await f.request("tenant-wait-cold", cp);
    const coldDone = provisioner.handle(cold);
    await eventually("the cold start holds the slot", async () => (coldStarts === 1 ? true : undefined));
    // No member yet and no slot: this request waits, with nothing registered for it.
    const waiting = await f.request("tenant-wait-warm", cp);
    const warmDone = provisioner.handle(waiting);
    await new Promise((r) => setTimeout(r, 500));
    const roster = await new RosterView(f.store, f.streams.layout).current();
    expect([...roster.runtimes.keys()].filter((id) => id.startsWith("rt-tenant-wait-warm-"))).toEqual([]);
    provisioner.pool.refill();
    await warmDone;
    const rt = await f.runtimeEvents(
      fulfilledRuntime(await f.settled("tenant-wait-warm", waiting.event.correlationId))!,
    );
    expect(hostStartedData(rt)?.convergenceSource).toMatch(/^warm-pool:pool-[a-z0-9]{12}$/);
    expect(types(rt).at(-1)).toBe("runtime.capacity-published");
    expect(coldStarts).toBe(1);
    const after = await new RosterView(f.store, f.streams.layout).current();
    expect([...after.runtimes.keys()].filter((id) => id.startsWith("rt-tenant-wait-warm-"))).toEqual([
      rt[0]!.subject.split(".").at(-2),
    ]);
    release();
    await coldDone;
    const coldRt = await f.runtimeEvents(
      fulfilledRuntime(await f.settled("tenant-wait-cold", cold.event.correlationId))!,
    );
    expect(hostStartedData(coldRt)?.convergence).toBe("created");
  }, 240_000);
  it("a waiter whose member ticket finds no claimable member waits again unregistered: it registers a cold start only once it holds a slot", async () => {
    const cp = uniqueName("cp");
    let release = () => undefined as void;
    const held = new Promise<void>((r) => (release = r));
    let coldStarts = 0;
    // Cold starts gated; no member can be bound here (canBind false), so a member ticket's claim finds nothing.
    const gated = gateColdStarts(held, () => void coldStarts++, true);
    const waited: { requestId: unknown; waits: unknown }[] = [];
    const waitsOf = (requestId: string) => waited.filter((w) => w.requestId === requestId).length;
    const { provisioner, strategy } = f.provisioner(
      {
        poolSizes: { process: 1 },
        controlPlaneId: cp,
        maxConcurrentHostStartups: 1,
        log: (msg, fields) => {
          if (msg === "scale-out waiting for a start slot or a member")
            waited.push({ requestId: fields?.requestId, waits: fields?.waits });
        },
      },
      {},
      gated,
    );
    const cold = await f.request("tenant-ticket-cold", cp);
    const coldDone = provisioner.handle(cold);
    await eventually("the cold start holds the slot", async () => (coldStarts === 1 ? true : undefined));
    const waiting = await f.request("tenant-ticket-wait", cp);
    const waitDone = provisioner.handle(waiting);
    const id = waiting.event.correlationId as string;
    await eventually("the request waits", async () => (waitsOf(id) === 1 ? true : undefined));
    // A member becomes ready: the waiter gets its ticket, its claim finds nothing, and it waits again.
    provisioner.pool.refill();
    await readyMembers(f, 1, strategy);
    await eventually("the request waits again", async () => (waitsOf(id) === 2 ? true : undefined), 60_000);
    const roster = await new RosterView(f.store, f.streams.layout).current();
    expect([...roster.runtimes.keys()].filter((id) => id.startsWith("rt-tenant-ticket-wait-"))).toEqual([]);
    // The slot freed: now it registers and starts cold, after the first start's request was settled.
    release();
    await coldDone;
    await waitDone;
    const rt = await f.runtimeEvents(
      fulfilledRuntime(await f.settled("tenant-ticket-wait", waiting.event.correlationId))!,
    );
    expect(hostStartedData(rt)?.convergence).toBe("created");
    const coldSettled = await f.settled("tenant-ticket-cold", cold.event.correlationId);
    expect(rt[0]!.seq).toBeGreaterThan(coldSettled.at(-1)!.seq);
    expect(coldStarts).toBe(2);
  }, 240_000);
  it("a first placement leaves the pool's last quarter to replacements: it gets no member there, a replacement does", async () => {
    const cp = uniqueName("cp");
    const { provisioner, strategy } = f.provisioner({ poolSizes: { process: 4 }, controlPlaneId: cp });
    provisioner.pool.refill();
    await readyMembers(f, 4, strategy);
    const start = (tenantId: string) =>
      claimStart(
        cp,
        tenantId,
        `rt-${tenantId}-${uniqueName("x")
          .replace(/[^a-z0-9]/g, "")
          .slice(-12)
          .padStart(12, "0")}`,
      );
    // One roster for every claim: each reserves its member before its batch is sent, so the order is
    // the call order, and members the refill readies meanwhile are not counted.
    const current = await new RosterView(f.store, f.streams.layout).current();
    const claim = (tenantId: string, replacement: boolean) =>
      provisioner.pool.claim(start(tenantId) as never, firstSlotOf(tenantId), current, replacement);
    const first = await Promise.all(["res-a", "res-b", "res-c", "res-d"].map((t) => claim(uniqueName(t), false)));
    // Pool 4: one member is kept for replacements, so the fourth first placement gets none (cold start).
    expect(first.map((c) => c !== undefined)).toEqual([true, true, true, false]);
    const replacement = await claim(uniqueName("res-e"), true);
    expect(replacement?.warm?.memberId).toMatch(/^pool-[a-z0-9]{12}$/);
    const claimed = [...first, replacement].flatMap((c) => (c?.warm ? [c.warm.memberId] : []));
    expect(new Set(claimed).size).toBe(4);
  }, 240_000);
});
