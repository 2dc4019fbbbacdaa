import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { EventId, type DroverEvent } from "../../contracts/index.ts";
import { createProcessStrategy } from "../../platform/hosts/process-strategy.ts";
import type { HostSpec, HostStrategy } from "../../platform/hosts/types.ts";
import { incarnationState, parseProcessIncarnation } from "../../platform/hosts/proc-table.ts";
import { consumeScaleOutRequests } from "../../services/provisioner/index.ts";
import { runtimeRef, scaleOutRef } from "../../streams/index.ts";
import { exampleEvent } from "../support/example-events.ts";
import { hostSpec, processGroupsWithEnv, RUNTIME_LOGS } from "../support/host-processes.ts";
import { uniqueName } from "../support/isolation.ts";
import { fulfilledRuntime, provisionerFixture, type ProvisionerFixture } from "../support/provisioner-fixture.ts";
import { eventually } from "../support/streams.ts";

// Real nats-server, real runtime processes (services/runtime/main.ts), the real process strategy.
let f: ProvisionerFixture;
beforeAll(async () => {
  f = await provisionerFixture(inject("natsUrl"));
});
afterAll(async () => {
  await f?.close();
});

const CP = "DROVER_CONTROL_PLANE_ID";
const types = (events: readonly { event: DroverEvent }[]) => events.map((s) => s.event.type);
const fulfilledOrRejectedRuntime = (events: readonly { event: DroverEvent }[]) => {
  const e = events.at(-1)?.event;
  return e?.type === "scaleout.rejected" || e?.type === "scaleout.fulfilled"
    ? (e.data.runtimeInstanceId as string)
    : "";
};

describe("provisioner with process hosts (real NATS, real runtime processes)", () => {
  it("turns a request from the shared durable consumer into exactly one runtime whose layers are all recorded, in order, before capacity-published", async () => {
    const { provisioner } = f.provisioner();
    const runners = await consumeScaleOutRequests(
      { jsm: f.streams.jsm, nc: f.streams.nc },
      f.streams.layout,
      provisioner,
      2,
      5_000,
    );
    try {
      const cp = uniqueName("cp");
      const requested = await f.request("tenant-fast", cp);
      const events = await f.settled("tenant-fast", requested.event.correlationId);
      expect(types(events)).toEqual(["scaleout.requested", "scaleout.observed", "scaleout.fulfilled"]);
      const id = fulfilledRuntime(events) as string;
      expect(id).toMatch(/^rt-tenant-fast-[a-z0-9]{12}$/);
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
      expect(
        rt.flatMap((s) => (s.event.type === "runtime.readiness-layer-passed" ? [s.event.data.layer] : [])),
      ).toEqual(["resource", "host", "endpoint", "command"]);
      const started = rt[2]?.event;
      const pid = started?.type === "runtime.host-started" ? started.data.pid : undefined;
      expect(
        processGroupsWithEnv(CP, cp),
        `runtime processes of ${cp}; host-started ${JSON.stringify(started)}`,
      ).toEqual([pid]);
      const published = rt.at(-1) as (typeof rt)[number];
      // Cold scale-out latency: request appended → capacity-published stored (server clock for both).
      console.log(
        `[provisioner] cold scale-out request→capacity-published: ${published.time.getTime() - requested.time.getTime()} ms`,
      );
    } finally {
      await Promise.all(runners.map((r) => r.stop()));
    }
  });

  it("proves the command layer over gRPC for a gRPC runtime and publishes its host:port endpoint", async () => {
    const { provisioner } = f.provisioner();
    const cp = uniqueName("cp");
    const requested = await f.request("tenant-grpc", cp, {}, { transport: "grpc" });
    await provisioner.handle(requested);
    const id = fulfilledRuntime(await f.settled("tenant-grpc", requested.event.correlationId)) as string;
    const rt = await f.runtimeEvents(id);
    const command = rt.find(
      (s) => s.event.type === "runtime.readiness-layer-passed" && s.event.data.layer === "command",
    )?.event;
    expect(command).toMatchObject({
      data: { detail: expect.stringMatching(/^GetQueueStatus over grpc answered by /) },
    });
    expect(rt.find((s) => s.event.type === "runtime.endpoint-published")?.event).toMatchObject({
      data: { endpoint: expect.stringMatching(/^127\.0\.0\.1:\d+$/) },
    });
  });

  it("rejects a runtime that exits during start-up with host-start-failed + process-exited-during-startup and leaves nothing running", async () => {
    // The runtime refuses a NATS URL that is not one and exits 2 before listening: a real start-up crash.
    const { provisioner } = f.provisioner({ natsUrl: "not-a-nats-url" });
    const cp = uniqueName("cp");
    const requested = await f.request("tenant-crash", cp);
    await provisioner.handle(requested);
    const events = await f.settled("tenant-crash", requested.event.correlationId);
    const rejected = events.at(-1)?.event;
    expect(rejected).toMatchObject({
      type: "scaleout.rejected",
      data: { reason: { code: "process-exited-during-startup" } },
    });
    const id = rejected?.type === "scaleout.rejected" ? (rejected.data.runtimeInstanceId as string) : "";
    const rt = await f.runtimeEvents(id);
    expect(rt.find((s) => s.event.type === "runtime.host-start-failed")?.event).toMatchObject({
      data: { reason: { code: "process-exited-during-startup" }, layer: "host" },
    });
    expect(types(rt)).not.toContain("runtime.capacity-published");
    expect(types(rt)).toContain("runtime.retired");
    expect(processGroupsWithEnv(CP, cp)).toEqual([]);
  });

  // A lying strategy in front of the real one: the runtime it starts is real, but not what the probe expects.
  const lying =
    (change: (spec: HostSpec) => HostSpec) =>
    (real: HostStrategy): HostStrategy => ({
      ...real,
      provider: real.provider,
      start: (spec, signal, onHost) => real.start(change(spec), signal, onHost),
      kill: real.kill,
      observe: real.observe,
      close: real.close,
    });

  for (const [what, change, code] of [
    [
      "a runtime that cannot answer GetQueueStatus (it was given another token)",
      (s: HostSpec) => ({ ...s, commandToken: "x".repeat(64) }),
      "runtime-command-readiness-failed",
    ],
    [
      "a runtime that answers as another RuntimeInstanceId",
      (s: HostSpec) => ({ ...s, runtimeInstanceId: `${s.runtimeInstanceId.slice(0, 50)}-impostor` }),
      "runtime-identity-mismatch",
    ],
  ] as const) {
    it(`never publishes ${what}: the request is rejected with ${code} and the host is killed`, async () => {
      const { provisioner } = f.provisioner({ probeBudgetMs: 3_000 }, {}, lying(change));
      const cp = uniqueName("cp");
      const requested = await f.request("tenant-liar", cp);
      await provisioner.handle(requested);
      const events = await f.settled("tenant-liar", requested.event.correlationId);
      expect(events.at(-1)?.event).toMatchObject({ type: "scaleout.rejected", data: { reason: { code } } });
      const rt = await f.runtimeEvents(fulfilledOrRejectedRuntime(events));
      expect(types(rt)).not.toContain("runtime.endpoint-published");
      expect(types(rt)).not.toContain("runtime.capacity-published");
      expect(rt.find((s) => s.event.type === "runtime.host-start-failed")?.event).toMatchObject({
        data: { reason: { code }, layer: "command" },
      });
      expect(processGroupsWithEnv(CP, cp)).toEqual([]);
    });
  }

  it("counts the tenant's live runtimes by its prefix from the runtime events, never other prefixes, and rejects at maxRuntimeInstances", async () => {
    const { provisioner } = f.provisioner();
    const reg = () =>
      ({ ...exampleEvent("runtime.registered"), eventId: EventId.parse(uniqueName("ev")) }) as DroverEvent;
    for (const id of [
      "rt-tenant-lim-aaaaaaaaaaaa",
      "rt-tenant-lim-bbbbbbbbbbbb",
      "rt-tenant-lim-x-cccccccccccc",
      "rt-other-dddddddddddd",
    ]) {
      await f.store.append(runtimeRef(id), reg(), { expectedSeq: 0 });
    }
    const cp = uniqueName("cp");
    const atLimit = await f.request("tenant-lim", cp, { maxRuntimeInstances: 2 });
    await provisioner.handle(atLimit);
    const events = await f.settled("tenant-lim", atLimit.event.correlationId);
    expect(types(events)).toEqual(["scaleout.requested", "scaleout.observed", "scaleout.rejected"]);
    expect(events.at(-1)?.event).toMatchObject({
      data: { reason: { code: "scale-out-limit-reached", detail: expect.stringMatching(/^2 live runtimes/) } },
    });
    expect(processGroupsWithEnv(CP, cp)).toEqual([]);
  });

  it("expires a request past its expiresAt without registering or starting anything", async () => {
    const { provisioner } = f.provisioner();
    const cp = uniqueName("cp");
    const late = await f.request("tenant-late", cp, {}, { expiresAt: new Date(Date.now() - 1_000).toISOString() });
    await provisioner.handle(late);
    expect(types(await f.settled("tenant-late", late.event.correlationId))).toEqual([
      "scaleout.requested",
      "scaleout.observed",
      "scaleout.expired",
    ]);
    expect(processGroupsWithEnv(CP, cp)).toEqual([]);
  });

  it("records runtime host-exited with the exact incarnation when a published runtime's process dies", async () => {
    const { provisioner } = f.provisioner();
    const cp = uniqueName("cp");
    const requested = await f.request("tenant-exit", cp);
    await provisioner.handle(requested);
    const id = fulfilledRuntime(await f.settled("tenant-exit", requested.event.correlationId)) as string;
    const started = (await f.runtimeEvents(id)).find((s) => s.event.type === "runtime.host-started")?.event;
    if (started?.type !== "runtime.host-started") throw new Error("no host-started");
    process.kill(started.data.pid as number, "SIGKILL");
    const exited = await eventually(
      "host-exited recorded",
      async () => (await f.runtimeEvents(id)).find((s) => s.event.type === "runtime.host-exited"),
      30_000,
    );
    expect(exited.event).toMatchObject({
      data: { hostIncarnation: started.data.hostIncarnation, kind: "exited", signal: "SIGKILL" },
    });
    // Recorded from what the provisioner knew of it (no read): the registration's correlation and tenant.
    const registered = (await f.runtimeEvents(id))[0]!.event;
    expect(exited.event).toMatchObject({ correlationId: registered.correlationId, tenantId: "tenant-exit" });
  });

  it("records host-exited once after another writer appended to a published runtime (its known sequence is stale)", async () => {
    const { provisioner } = f.provisioner();
    const requested = await f.request("tenant-exit-late", uniqueName("cp"));
    await provisioner.handle(requested);
    const id = fulfilledRuntime(await f.settled("tenant-exit-late", requested.event.correlationId)) as string;
    const before = await f.runtimeEvents(id);
    const started = before.find((s) => s.event.type === "runtime.host-started")?.event;
    if (started?.type !== "runtime.host-started") throw new Error("no host-started");
    // Another writer (recovery's suspicion) after the provisioner's last append.
    const suspected = exampleEvent("runtime.suspected");
    await f.store.append(
      runtimeRef(id),
      {
        ...suspected,
        eventId: EventId.parse(uniqueName("ev")),
        tenantId: "tenant-exit-late",
        data: { ...suspected.data, hostIncarnation: started.data.hostIncarnation },
      } as DroverEvent,
      { expectedSeq: before.at(-1)!.seq },
    );
    process.kill(started.data.pid as number, "SIGKILL");
    await eventually(
      "host-exited recorded",
      async () => (await f.runtimeEvents(id)).find((s) => s.event.type === "runtime.host-exited"),
      30_000,
    );
    const after = types(await f.runtimeEvents(id));
    expect(after.slice(-2)).toEqual(["runtime.suspected", "runtime.host-exited"]);
    expect(after.filter((t) => t === "runtime.host-exited")).toHaveLength(1);
  });

  it("fulfils a request delivered concurrently to two provisioner replicas once, with one runtime process", async () => {
    const a = f.provisioner().provisioner;
    const b = f.provisioner().provisioner;
    const cp = uniqueName("cp");
    const requested = await f.request("tenant-dup", cp);
    await Promise.all([a.handle(requested), b.handle(requested), a.handle(requested)]);
    const events = await f.settled("tenant-dup", requested.event.correlationId);
    expect(types(events).filter((t) => t === "scaleout.fulfilled")).toHaveLength(1);
    expect(types(events).filter((t) => t === "scaleout.rejected")).toHaveLength(0);
    expect(processGroupsWithEnv(CP, cp)).toHaveLength(1);
  });

  it("a provisioner that takes over a dead one's request kills the orphaned host by its exact incarnation, retires it, and fulfils with a new runtime", async () => {
    const cp = uniqueName("cp");
    const requested = await f.request("tenant-takeover", cp);
    const requestId = requested.event.correlationId;
    // The dead provisioner got as far as host-started: its runtime (a stand-in process) still runs, not our child.
    const deadStrategy = createProcessStrategy({
      command: [process.execPath, "test/support/fake-runtime.mjs"],
      baseEnv: { PATH: process.env.PATH ?? "" },
      logDir: RUNTIME_LOGS,
    });
    const orphanId = `rt-tenant-takeover-${"o".repeat(12)}`;
    const orphan = await deadStrategy.start(hostSpec({ runtimeInstanceId: orphanId, controlPlaneId: cp }));
    if (orphan.outcome !== "created") throw new Error(JSON.stringify(orphan));
    const dead = {
      instanceId: "prov-dead",
      correlationId: requestId,
      causationId: requested.event.eventId,
      tenantId: "tenant-takeover",
    };
    const env = (type: DroverEvent["type"], data: object, tenant = true) =>
      ({
        ...exampleEvent(type),
        eventId: EventId.parse(uniqueName("ev")),
        writer: { service: "provisioner", instanceId: dead.instanceId },
        correlationId: requestId,
        ...(tenant ? { tenantId: dead.tenantId } : {}),
        data,
      }) as DroverEvent;
    await f.store.append(
      scaleOutRef("tenant-takeover", requestId),
      env("scaleout.observed", { provisionerInstanceId: dead.instanceId }),
      { expectedSeq: requested.seq },
    );
    const reg = exampleEvent("runtime.registered");
    await f.store.appendAll(
      runtimeRef(orphanId),
      [
        env("runtime.registered", {
          ...reg.data,
          controlPlaneId: cp,
          tenantId: "tenant-takeover",
          scaleOutRequestId: requestId,
        }),
        env("runtime.host-start-requested", { attempt: 1 }),
        env("runtime.host-started", {
          hostIncarnation: orphan.host.hostIncarnation,
          pid: orphan.host.pid,
          node: orphan.host.node,
          convergence: "created",
        }),
      ],
      { expectedSeq: 0 },
    );

    const { provisioner } = f.provisioner();
    await provisioner.handle(requested);
    const events = await f.settled("tenant-takeover", requestId);
    expect(types(events)).toEqual([
      "scaleout.requested",
      "scaleout.observed",
      "scaleout.observed",
      "scaleout.fulfilled",
    ]);
    const inc = parseProcessIncarnation(orphan.host.hostIncarnation)!;
    expect(incarnationState(inc.pid, inc.startTime)).toBe("gone");
    const old = await f.runtimeEvents(orphanId);
    expect(old.map((s) => s.event.type).slice(3, 5)).toEqual(["runtime.host-start-failed", "runtime.retired"]);
    expect(old[3]?.event).toMatchObject({ data: { reason: { code: "host-start-abandoned" } } });
    const fresh = fulfilledRuntime(events) as string;
    expect(fresh).not.toBe(orphanId);
    expect(types(await f.runtimeEvents(fresh))).toContain("runtime.capacity-published");
    await eventually(
      "only the new runtime runs",
      async () => (processGroupsWithEnv(CP, cp).length === 1 ? true : undefined),
      10_000,
    );
  });
});
