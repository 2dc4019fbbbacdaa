import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
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
});
