import { resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { EventId, TenantSettings, WorkerVersion, type DroverEvent } from "../../contracts/index.ts";
import { sourceWorker } from "../../platform/hosts/worker-builds.ts";
import { recordDeploy, watchDrainedRuntimes } from "../../services/provisioner/index.ts";
import { runtimeRef } from "../../streams/index.ts";
import { exampleEvent } from "../support/example-events.ts";
import { uniqueName } from "../support/isolation.ts";
import { provisionerFixture, type ProvisionerFixture } from "../support/provisioner-fixture.ts";

// A real nats-server and a real runtime process started by the provisioner: the drained-runtime
// retirement logs what its stop did, not "retired" for a runtime it left to recovery.
const MODULE = resolve(import.meta.dirname, "../support/workers/cache-worker.ts");
let f: ProvisionerFixture;
beforeAll(async () => {
  f = await provisionerFixture(inject("natsUrl"));
});
afterAll(async () => {
  await f?.close();
});

describe("drained runtime retirement (real nats-server and runtime process)", () => {
  it("a drained runtime recovery suspected first is logged as left to recovery, not retired, and no retired is appended", async () => {
    const tenantId = uniqueName("tdr");
    const logs: { msg: string; fields: Record<string, unknown> }[] = [];
    const { provisioner, strategy, deps } = f.provisioner({
      controlPlaneId: "cp-drain",
      tenantSettings: (t) =>
        TenantSettings.parse({ tenantId: t, isolationMode: "dedicated", worker: { module: MODULE, kinds: ["price"] } }),
      buildWorker: sourceWorker,
      log: (msg, fields) => logs.push({ msg, fields: fields ?? {} }),
    });
    const req = await f.request(tenantId, "cp-drain");
    await provisioner.handle(req);
    const settled = await f.settled(tenantId, req.event.correlationId);
    const done = settled.at(-1)?.event;
    expect(done?.type).toBe("scaleout.fulfilled");
    const id = done?.type === "scaleout.fulfilled" ? (done.data.runtimeInstanceId as string) : "";
    const d = deps;
    // Another version is deployed: this runtime now drains; recovery suspected it meanwhile.
    await recordDeploy(d, tenantId, { version: WorkerVersion.parse("2".repeat(64)) }, ["price"]);
    const ref = runtimeRef(id);
    const h = await f.store.read(ref);
    const host = h.events.find((s) => s.event.type === "runtime.host-started")?.event;
    const suspected = {
      ...exampleEvent("runtime.suspected"),
      eventId: EventId.parse(uniqueName("ev")),
      tenantId,
      data: {
        ...exampleEvent("runtime.suspected").data,
        hostIncarnation: host?.type === "runtime.host-started" ? host.data.hostIncarnation : "",
      },
    } as DroverEvent;
    await f.store.append(ref, suspected, { expectedSeq: h.lastSeq });

    const watch = watchDrainedRuntimes(
      d,
      [{ strategy, liveHosts: () => strategy.liveHosts() }],
      provisioner.roster,
      provisioner.retiring,
      {
        everyMs: 200,
        idleMs: 0,
      },
    );
    try {
      const deadline = Date.now() + 30_000;
      while (!logs.some((l) => l.fields.runtimeInstanceId === id && "stopMs" in l.fields) && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 100));
    } finally {
      await watch.stop();
    }
    const line = logs.find((l) => l.fields.runtimeInstanceId === id && "stopMs" in l.fields);
    expect(line?.fields.outcome).toBe("left-to-recovery");
    expect(line?.msg).not.toBe("drained runtime retired");
    expect(line?.msg).toMatch(/left to recovery/);
    expect((await f.runtimeEvents(id)).map((s) => s.event.type)).not.toContain("runtime.retired");
  }, 120_000);
});
