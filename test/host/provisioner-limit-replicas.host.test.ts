import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import type { DroverEvent } from "../../contracts/index.ts";
import { claimableMembers, liveByPrefix, RosterView } from "../../services/provisioner/index.ts";
import { runtimeQuotaRef, type EventStore } from "../../streams/index.ts";
import { processGroupsWithEnv } from "../support/host-processes.ts";
import { uniqueName } from "../support/isolation.ts";
import { provisionerFixture, type ProvisionerFixture } from "../support/provisioner-fixture.ts";
import { eventually } from "../support/streams.ts";

// Real nats-server (atomic batches, conditional appends), real runtime processes, the real process
// strategy; two provisioner replicas, each with its own roster and per-prefix gate, sharing the log.
let f: ProvisionerFixture;
beforeAll(async () => {
  f = await provisionerFixture(inject("natsUrl"));
});
afterAll(async () => {
  await f?.close();
});

const CP = "DROVER_CONTROL_PLANE_ID";

/**
 * Both replicas' first registration waits until the other has reached its own, so each planned on a
 * roster without the other's runtime before either wrote: the race the slot must decide. Then rank
 * 0 appends first and rank 1 once rank 0's append has settled, so the loser is known (rank 1).
 * Later appends (the loser's second plan) pass at once.
 */
function twoWayBarrier() {
  let arrived = 0;
  let bothArrived!: () => void;
  const both = new Promise<void>((r) => (bothArrived = r));
  let firstDone!: () => void;
  const first = new Promise<void>((r) => (firstDone = r));
  const held = new Set<number>();
  const bounded = (p: Promise<void>) => Promise.race([p, new Promise((r) => setTimeout(r, 20_000))]);
  return {
    get arrived() {
      return arrived;
    },
    /** `store` with its first registration held at the barrier, as rank 0 or 1. */
    hold(store: EventStore, rank: 0 | 1): EventStore {
      const at = async <T>(events: readonly DroverEvent[], append: () => Promise<T>): Promise<T> => {
        if (held.has(rank) || !events.some((e) => e.type === "runtime.registered")) return append();
        held.add(rank);
        if (++arrived === 2) bothArrived();
        await bounded(both);
        if (rank === 1) await bounded(first);
        try {
          return await append();
        } finally {
          if (rank === 0) firstDone();
        }
      };
      return {
        append: (ref, e, o) => store.append(ref, e, o),
        appendAll: (ref, es, o) => at(es, () => store.appendAll(ref, es, o)),
        appendAtomic: (entries) =>
          at(
            entries.flatMap((x) => x.events),
            () => store.appendAtomic(entries),
          ),
        read: (ref, o) => store.read(ref, o),
        lastSeq: (ref) => store.lastSeq(ref),
        lastOfType: (ref, type) => store.lastOfType(ref, type),
        replay: (from, on, o) => store.replay(from, on, o),
      };
    },
  };
}

/**
 * Two replicas (own roster, own prefix gate, shared log) each handle one request of `tenant`, limit
 * 1, at once; rank 0 (`first`) commits first. `warmLoser`: the rank-1 replica keeps a warm pool of
 * one and claims its member, so the losing batch is a claim.
 */
async function race(tenant: string, warmLoser = false) {
  const barrier = twoWayBarrier();
  const logs: string[] = [];
  const log = (msg: string) => void logs.push(msg);
  const cp = uniqueName("cp");
  const first = f.provisioner({ store: barrier.hold(f.store, 0), log });
  const second = f.provisioner({
    store: barrier.hold(f.store, 1),
    log,
    ...(warmLoser ? { poolSizes: { process: 1 }, controlPlaneId: cp } : {}),
  });
  let member: string | undefined;
  if (warmLoser) {
    second.provisioner.pool.refill();
    member = await eventually(
      "the rank-1 replica's pool member ready",
      async () =>
        claimableMembers(await new RosterView(f.store, f.streams.layout).current(), "process", cp).find((x) =>
          second.strategy.canBind(x.runtimeInstanceId),
        )?.runtimeInstanceId,
      90_000,
    );
  }
  const r1 = await f.request(tenant, cp, { maxRuntimeInstances: 1 });
  const r2 = await f.request(tenant, cp, { maxRuntimeInstances: 1 });
  await Promise.all([first.provisioner.handle(r1), second.provisioner.handle(r2)]);
  const outcomes = await Promise.all(
    [r1, r2].map(async (r) => (await f.settled(tenant, r.event.correlationId)).at(-1)!.event),
  );
  const slots = (await f.store.read(runtimeQuotaRef(tenant, `rt-${tenant}`))).events.map((x) => x.event);
  const roster = await new RosterView(f.store, f.streams.layout).current();
  return { barrier, logs, cp, outcomes, slots, roster, member };
}

/** The rank-0 request is fulfilled with the one runtime of the prefix; the rank-1 request lost its slot and was rejected. */
function expectFirstWins(r: Awaited<ReturnType<typeof race>>, tenant: string): string {
  expect(r.barrier.arrived).toBe(2); // both planned on a roster without the other's runtime
  const [won, lost] = r.outcomes;
  if (won?.type !== "scaleout.fulfilled") throw new Error(`rank 0 was not fulfilled: ${JSON.stringify(won)}`);
  expect(lost).toMatchObject({
    type: "scaleout.rejected",
    data: { reason: { code: "scale-out-limit-reached", detail: expect.stringMatching(/^1 live runtimes/) } },
  });
  expect(lost!.data).not.toHaveProperty("runtimeInstanceId"); // the loser registered nothing
  expect(r.logs.filter((m) => m === "runtime start lost its slot: planning again")).toHaveLength(1);
  const winner = won.data.runtimeInstanceId as string;
  expect(r.slots).toHaveLength(1);
  expect(r.slots[0]).toMatchObject({
    type: "quota.runtime-slot-taken",
    data: { runtimeInstanceId: winner, live: 0, maxRuntimeInstances: 1 },
  });
  expect(liveByPrefix(r.roster, `rt-${tenant}`).map((x) => x.runtimeInstanceId)).toEqual([winner]);
  return winner;
}

describe("the tenant's runtime limit across provisioner replicas (real NATS, real runtime processes)", () => {
  it("two replicas racing for a tenant's last runtime slot: exactly one host starts, the other request is rejected scale-out-limit-reached after its slot append conflicted", async () => {
    const r = await race("tenant-race");
    expectFirstWins(r, "tenant-race");
    expect(processGroupsWithEnv(CP, r.cp)).toHaveLength(1);
  }, 240_000);

  it("the same race lost by a warm pool claim: its batch commits nothing, so its member stays unclaimed and claimable, and only the winner's host runs for the tenant", async () => {
    const r = await race("tenant-warm", true);
    expectFirstWins(r, "tenant-warm");
    const claimed = [...r.roster.runtimes.values()].filter((x) => x.pool?.claimedFor !== undefined);
    expect(claimed).toEqual([]);
    expect(claimableMembers(r.roster, "process", r.cp).map((x) => x.runtimeInstanceId)).toContain(r.member);
    expect(r.slots[0]!.data).not.toHaveProperty("warmPoolMember");
    // One host carries the control plane's identity: the winner's (an unbound member carries none).
    expect(processGroupsWithEnv(CP, r.cp)).toHaveLength(1);
  }, 240_000);
});
