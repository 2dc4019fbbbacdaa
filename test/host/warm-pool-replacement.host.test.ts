import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { uniqueName } from "../support/isolation.ts";
import { gateStarts } from "../support/gate-starts.ts";
import {
  firstSlotOf,
  provisionerFixture,
  type ProvisionerFixture,
  fulfilledRuntime,
  hostStartedData,
} from "../support/provisioner-fixture.ts";
import { eventually } from "../support/streams.ts";
import { claimStart, readyMembers, replacementId } from "../support/warm-pool-members.ts";

// Real nats-server, real runtime processes (pooled, then bound; one SIGKILLed), the real process
// strategy behind gates on its cold starts and on its pooled starts after the first pool.
let f: ProvisionerFixture;
beforeAll(async () => {
  f = await provisionerFixture(inject("natsUrl"));
});
afterAll(async () => {
  await f?.close();
});

describe("a lost runtime's replacement asked for by admission (real NATS, real runtime processes)", () => {
  it("a request of a prefix whose last runtime was lost is a replacement though it names none: it takes the reserved member at once instead of waiting behind a first placement's start slot", async () => {
    const cp = uniqueName("cp");
    let release = () => undefined as void;
    const held = new Promise<void>((r) => (release = r));
    let coldStarts = 0;
    let poolFull = false;
    // A request's wait, as the provisioner logs it: resolves once that request waits for a slot or a member.
    const waiters = new Map<unknown, () => void>();
    const waitOf = (requestId: string) => new Promise<string>((r) => waiters.set(requestId, () => r("waited")));
    const gated = gateStarts({
      cold: { held, onStart: () => void coldStarts++ },
      // Once the first pool is ready, refill members never become ready: the pool only drains.
      pooled: { held, holds: () => poolFull },
    });
    const { provisioner, strategy } = f.provisioner(
      {
        poolSizes: { process: 4 },
        controlPlaneId: cp,
        maxConcurrentHostStartups: 1,
        log: (msg, fields) => {
          if (msg === "scale-out waiting for a start slot or a member") waiters.get(fields?.requestId)?.();
        },
      },
      {},
      gated,
    );
    provisioner.pool.refill();
    await readyMembers(f, 4, strategy);
    poolFull = true;
    // Tenant L's runtime (a member), then its host SIGKILLed: the provisioner records the exit.
    const tenant = uniqueName("lost");
    const first = await f.request(tenant, cp);
    await provisioner.handle(first);
    const lost = fulfilledRuntime(await f.settled(tenant, first.event.correlationId))!;
    process.kill(hostStartedData(await f.runtimeEvents(lost))!.pid!, "SIGKILL");
    await eventually(
      "the lost runtime's exit recorded",
      async () =>
        (await f.runtimeEvents(lost)).some((s) => s.event.type === "runtime.host-exited") ? true : undefined,
      120_000,
    );
    // Two first placements take members until only the replacements' reserve (a quarter of 4) is left.
    for (const t of [uniqueName("fp-a"), uniqueName("fp-b")])
      expect(
        (await provisioner.pool.claim(claimStart(cp, t, replacementId(t)) as never, firstSlotOf(t)))?.warm,
      ).toBeDefined();
    // A third first placement cold-starts and holds the only start slot.
    const blocker = await f.request(uniqueName("fp-c"), cp);
    const blocked = provisioner.handle(blocker);
    await eventually(
      "a first placement's cold start holds the slot",
      async () => (coldStarts === 1 ? true : undefined),
      120_000,
    );
    // Admission's request for the tenant's queued runs (recovery's own, naming the lost runtime, came second).
    const replacement = await f.request(tenant, cp);
    const id = replacement.event.correlationId as string;
    const handled = provisioner.handle(replacement);
    try {
      // Before, it planned as a first placement: no member past the reserve, so it waited for the slot.
      expect(await Promise.race([handled.then(() => "handled"), waitOf(id)])).toBe("handled");
      const rt = await f.runtimeEvents(fulfilledRuntime(await f.settled(tenant, id))!);
      expect(hostStartedData(rt)?.convergenceSource).toMatch(/^warm-pool:pool-[a-z0-9]{12}$/);
      expect(coldStarts).toBe(1);
    } finally {
      release();
    }
    await Promise.all([blocked, handled]);
    await provisioner.pool.idle();
  }, 240_000);
});
