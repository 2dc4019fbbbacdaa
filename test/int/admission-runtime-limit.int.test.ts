import { jetstream } from "@nats-io/jetstream";
import { describe, expect, it } from "vitest";
import { DroverConfig } from "../../contracts/index.ts";
import type { CapacityDescriptor } from "../../aggregates/capacity/descriptor.ts";
import { redisCapacityView } from "../../platform/capacity-view.ts";
import { randomIds, systemClock } from "../../platform/envelope.ts";
import { runtimeRef, type StoredEvent } from "../../streams/index.ts";
import { publishBeat } from "../support/fake-runtime-capacity.ts";
import { looseEvent } from "../support/loose-event.ts";
import { eventually } from "../support/streams.ts";
import { admissionConfig, admissionHarness } from "./admission-harness.ts";

/** t-blue may have one runtime (prefix `rt-t-blue`). */
const limitOne = (cp: string) => {
  const base = admissionConfig(cp);
  return DroverConfig.parse({
    ...base,
    tenants: base.tenants.map((t) => (t.tenantId === "t-blue" ? { ...t, maxRuntimeInstances: 1 } : t)),
  });
};

describe("admission's scale-out at the tenant's runtime limit (real NATS + Redis; no provisioner)", () => {
  const adm = admissionHarness("cp-adm-limit");
  const requests = async () => {
    const out: StoredEvent[] = [];
    await adm.store.replay({ seq: 1 }, (e) => void (e.event.type === "scaleout.requested" && out.push(e)), {
      filter: `${adm.fx.layout.eventPrefix}.scaleout.>`,
    });
    return out;
  };

  it("asks for no runtime while its view shows the tenant's runtimes at maxRuntimeInstances, and asks once one of them is suspected", async () => {
    // The tenant's one runtime, full: its run queues, and a new runtime is all that could take it.
    await adm.readyRuntime("rt-t-blue-a", "t-blue", 1);
    await publishBeat(jetstream(adm.fx.nc), adm.fx.layout, "rt-t-blue-a", 2, 0);
    await eventually("the full runtime in the view", async () => {
      const d = await redisCapacityView<CapacityDescriptor>(adm.redis, adm.cp).get("rt-t-blue-a");
      return d?.beats["pid:1:1"]?.availableSlots === 0 ? true : undefined;
    });
    await adm.admission(limitOne(adm.cp));
    await adm.submit("t-blue", "run-l1");
    await eventually("queued", async () =>
      (await adm.types("run-l1")).includes("run.queued-globally") ? true : undefined,
    );
    // Passes run every 100 ms: ten of them would each have asked (the provisioner rejecting each at the limit).
    await new Promise((r) => setTimeout(r, 1_000));
    expect(await requests()).toEqual([]);
    expect(adm.sent).toHaveLength(0);

    // Lost (recovery suspects it): it no longer counts toward the limit, so admission asks for a runtime.
    const suspected = looseEvent(
      { writer: { service: "recovery", instanceId: "rec-1" }, clock: systemClock, ids: randomIds },
      "runtime.suspected",
      { incidentId: "inc-limit-1", reason: { code: "heartbeat-stale", detail: "test" }, hostIncarnation: "pid:1:1" },
      { correlationId: "rt-t-blue-a", causationId: "test" },
    );
    await adm.store.append(runtimeRef("rt-t-blue-a"), suspected, {
      expectedSeq: await adm.store.lastSeq(runtimeRef("rt-t-blue-a")),
    });
    const made = await eventually("a scale-out request", async () => {
      const r = await requests();
      return r.length > 0 ? r : undefined;
    });
    expect(made).toHaveLength(1);
    await eventually("the run waits on it", async () =>
      (await adm.types("run-l1")).includes("run.scale-out-requested") ? true : undefined,
    );
  });
});
