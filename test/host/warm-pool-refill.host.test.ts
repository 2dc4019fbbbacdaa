import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { createWarmPool, RosterView } from "../../services/provisioner/index.ts";
import { gateStarts } from "../support/gate-starts.ts";
import { uniqueName } from "../support/isolation.ts";
import { firstSlotOf, provisionerFixture, type ProvisionerFixture } from "../support/provisioner-fixture.ts";
import { eventually } from "../support/streams.ts";
import { claimStart, readyMembers, replacementId } from "../support/warm-pool-members.ts";

// Real nats-server, real runtime processes (pooled), the real process strategy behind a gate on its
// pooled starts only.
let f: ProvisionerFixture;
beforeAll(async () => {
  f = await provisionerFixture(inject("natsUrl"));
});
afterAll(async () => {
  await f?.close();
});

/**
 * A pool of 4 ready members whose next pooled starts are held (a slow boot) and whose first wait
 * for the starts in flight (busy-starts.ts, bounded at 3 s in the product) lasts until the test
 * ends it; later waits end at once. `startsAfterWaits`: how many waits the refill had begun when
 * each held member start came.
 */
async function heldRefill() {
  const cp = uniqueName("cp");
  let holding = false;
  let release = () => undefined as void;
  const held = new Promise<void>((r) => (release = r));
  const startsAfterWaits: number[] = [];
  let waits = 0;
  const gated = gateStarts({
    pooled: { held, holds: () => holding, onStart: () => void startsAfterWaits.push(waits) },
  });
  const { strategy, deps } = f.provisioner(
    { poolSizes: { process: 4 }, controlPlaneId: cp, maxConcurrentHostStartups: 3 },
    {},
    gated,
  );
  let endFirstWait = () => undefined as void;
  const firstWait = new Promise<void>((r) => (endFirstWait = r));
  const pool = createWarmPool(deps, new RosterView(f.store, f.streams.layout), undefined, () =>
    ++waits === 1 ? firstWait : Promise.resolve(),
  );
  pool.refill();
  await readyMembers(f, 4, strategy);
  holding = true;
  const claim = async (tenantId: string) =>
    pool.claim(claimStart(cp, tenantId, replacementId(tenantId)) as never, firstSlotOf(tenantId), undefined, true);
  return {
    pool,
    claim,
    startsAfterWaits,
    waits: () => waits,
    endFirstWait: () => endFirstWait(),
    release: () => release(),
    settle: async () => {
      await readyMembers(f, 4, strategy);
      await pool.idle();
    },
  };
}

describe("warm pool refill (real NATS, real runtime processes)", () => {
  it("a claim while a refill round's member still boots starts the next member at once, not after that boot", async () => {
    const cp = uniqueName("cp");
    let holding = false;
    let release = () => undefined as void;
    const held = new Promise<void>((r) => (release = r));
    let heldStarts = 0;
    // The real strategy; once `holding`, each pooled start waits for the release (a slow Pod boot).
    const gated = gateStarts({ pooled: { held, holds: () => holding, onStart: () => void heldStarts++ } });
    const { provisioner, strategy } = f.provisioner({ poolSizes: { process: 2 }, controlPlaneId: cp }, {}, gated);
    provisioner.pool.refill();
    await readyMembers(f, 2, strategy);
    holding = true;
    // As the provisioner does (provisioner.ts): once a claimed member's bind counts as in flight, refill.
    const claim = async (tenantId: string) => {
      const planned = await provisioner.pool.claim(
        claimStart(cp, tenantId, replacementId(tenantId)) as never,
        firstSlotOf(tenantId),
        undefined,
        true,
      );
      if (planned?.warm) provisioner.pool.refill();
      return planned;
    };
    expect((await claim("refill-a"))?.warm).toBeDefined();
    await eventually(
      "the refill's first member boots (held)",
      async () => (heldStarts === 1 ? true : undefined),
      60_000,
    );
    expect((await claim("refill-b"))?.warm).toBeDefined();
    // Before, the refill waited for its round's members to be ready before it looked at the pool
    // again: the second member started only after the first one's boot.
    await eventually(
      "a second member starts while the first still boots",
      async () => (heldStarts === 2 ? true : undefined),
      60_000,
    );
    release();
    await readyMembers(f, 2, strategy);
    await provisioner.pool.idle();
  }, 240_000);

  it("a round that waited for the starts in flight is sized on the roster after the wait: claims made meanwhile start their members at once, with no second wait", async () => {
    const { pool, claim, startsAfterWaits, waits, endFirstWait, release, settle } = await heldRefill();
    // One claim: the pool still holds 3 of 4 (not urgent), so its refill waits for the starts in flight.
    expect((await claim("sized-a"))?.warm).toBeDefined();
    pool.refill();
    await eventually(
      "the refill waits for the starts in flight",
      async () => (waits() === 1 ? true : undefined),
      30_000,
    );
    // Two more claims while it waits.
    expect((await claim("sized-b"))?.warm).toBeDefined();
    pool.refill();
    expect((await claim("sized-c"))?.warm).toBeDefined();
    pool.refill();
    endFirstWait();
    await eventually("three members start", async () => (startsAfterWaits.length >= 3 ? true : undefined), 60_000);
    // Before, the round was sized on the roster read before the wait (one claim): one member, then a
    // second wait before the other two.
    expect(startsAfterWaits).toEqual([1, 1, 1]);
    release();
    await settle();
  }, 240_000);

  it("claims that drain the pool below a quarter while a refill waits for the starts in flight start their members at once, not at the wait's end", async () => {
    const { pool, claim, startsAfterWaits, waits, endFirstWait, release, settle } = await heldRefill();
    try {
      // One claim: the pool still holds 3 of 4 (not urgent), so its refill waits for the starts in flight.
      expect((await claim("burst-a"))?.warm).toBeDefined();
      pool.refill();
      await eventually(
        "the refill waits for the starts in flight",
        async () => (waits() === 1 ? true : undefined),
        30_000,
      );
      // Three more while it waits: the pool is empty, under a quarter of its size (urgent).
      for (const t of ["burst-b", "burst-c", "burst-d"]) {
        expect((await claim(t))?.warm).toBeDefined();
        pool.refill();
      }
      // Before, the refill started nothing until its wait ended, judged on the roster of one claim.
      await eventually(
        "four members start while the first wait still holds",
        async () => (startsAfterWaits.length >= 4 ? true : undefined),
        20_000,
      );
      expect(startsAfterWaits).toEqual([1, 1, 1, 1]);
    } finally {
      endFirstWait();
      release();
    }
    await settle();
  }, 240_000);
});
