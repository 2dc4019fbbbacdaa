import { describe, expect, it } from "vitest";
import { EventId, ScaleOutRequestId, type DroverEvent } from "../../../contracts/index.ts";
import type { HostFacts, HostSpec, HostStartResult, HostStrategy, KillResult } from "../../../platform/hosts/types.ts";
import { DEFAULT_LAYOUT, runtimeRef, scaleOutRef } from "../../../streams/index.ts";
import { exampleEvent } from "../../../test/support/example-events.ts";
import { MemoryEventStore } from "../../../test/support/memory-event-store.ts";
import type { ProvisionerDeps } from "./context.ts";
import { createProvisioner } from "./provisioner.ts";

// In-memory store and a scripted host strategy: proves the log-level fencing between two handlers
// of one request, and no transport, process or JetStream behaviour.
class ScriptedStrategy implements HostStrategy {
  readonly provider = "process" as const;
  readonly killed: string[] = [];
  private n = 0;
  constructor(private readonly hold?: Promise<void>) {}
  async start(
    spec: HostSpec,
    _signal?: AbortSignal,
    onHostCreated?: (h: HostFacts) => Promise<void>,
  ): Promise<HostStartResult> {
    this.n += 1;
    const host = { hostIncarnation: `pid:${1000 + this.n}:${this.n}`, pid: 1000 + this.n };
    await onHostCreated?.(host);
    await this.hold;
    return {
      outcome: "created",
      host,
      endpoint: { endpoint: `http://127.0.0.1:${9000 + this.n}`, aliases: [] },
      layersPassed: ["resource", "host", "endpoint"],
      owned: [`process:${host.pid}`],
    };
  }
  async kill(runtimeInstanceId: string, host: HostFacts): Promise<KillResult> {
    this.killed.push(`${runtimeInstanceId}@${host.hostIncarnation}`);
    return {
      outcome: "killed",
      proof: { kind: "process-exit", pid: host.pid ?? 1, exitCode: null, signal: "SIGKILL" },
    };
  }
  observe(): () => void {
    return () => undefined;
  }
  async close(): Promise<void> {}
}

let ids = 0;
function deps(store: MemoryEventStore, instanceId: string, strategy: HostStrategy): ProvisionerDeps {
  return {
    store,
    layout: DEFAULT_LAYOUT,
    strategies: new Map([["process", strategy]]),
    instanceId,
    natsUrl: "nats://127.0.0.1:4222",
    clock: { now: () => new Date("2026-01-02T03:00:00.000Z") },
    newEventId: () => `ev-${instanceId}-${++ids}`,
    newSuffix: () => `${instanceId.slice(-1)}${String(++ids).padStart(11, "0")}`,
    commandTokenFor: () => "t".repeat(32),
    probeBudgetMs: 1_000,
    killBudgetMs: 1_000,
    maxConcurrentHostStartups: 2,
    log: () => undefined,
    probe: async () => ({ ok: true, detail: "scripted GetQueueStatus" }),
  };
}

async function until(what: string, check: () => boolean): Promise<void> {
  for (let i = 0; i < 2_000 && !check(); i++) await new Promise((r) => setImmediate(r));
  if (!check()) throw new Error(`never happened: ${what}`);
}

describe("provisioner takeover (in-memory store, scripted host strategy; proves no transport)", () => {
  it("a slow handler whose request was taken over can never publish its runtime: its next append conflicts, it kills its host and settles nothing", async () => {
    const store = new MemoryEventStore();
    const base = exampleEvent("scaleout.requested");
    const requested = {
      ...base,
      eventId: EventId.parse("ev-req"),
      data: { ...base.data, requestId: ScaleOutRequestId.parse("so-take"), expiresAt: "2026-01-02T04:00:00.000Z" },
    } as DroverEvent;
    await store.append(scaleOutRef("tenant-a", "so-take"), requested, { expectedSeq: 0 });
    const stored = (await store.read(scaleOutRef("tenant-a", "so-take"))).events[0]!;

    let release!: () => void;
    const slowStrategy = new ScriptedStrategy(
      new Promise<void>((r) => {
        release = r;
      }),
    );
    const slow = createProvisioner(deps(store, "prov-a", slowStrategy)).handle(stored);
    await until("the slow handler recorded host-started", () =>
      store.events.some((e) => e.event.type === "runtime.host-started"),
    );
    const slowRuntime = store.events.find((e) => e.event.type === "runtime.registered")!.subject.split(".")[2]!;

    const fastStrategy = new ScriptedStrategy();
    await createProvisioner(deps(store, "prov-b", fastStrategy)).handle(stored);
    release();
    await slow;

    const request = (await store.read(scaleOutRef("tenant-a", "so-take"))).events.map((e) => e.event.type);
    expect(request).toEqual(["scaleout.requested", "scaleout.observed", "scaleout.observed", "scaleout.fulfilled"]);
    const old = (await store.read(runtimeRef(slowRuntime))).events.map((e) => e.event.type);
    expect(old).toEqual([
      "runtime.registered",
      "runtime.host-start-requested",
      "runtime.host-started",
      "runtime.host-start-failed",
      "runtime.retired",
    ]);
    // Both the taker (by the recorded incarnation) and the slow handler (its own start) killed the old host.
    expect(fastStrategy.killed).toEqual([`${slowRuntime}@pid:1001:1`]);
    expect(slowStrategy.killed).toEqual([`${slowRuntime}@pid:1001:1`]);
  });
});
