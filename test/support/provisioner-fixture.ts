import { randomUUID } from "node:crypto";
import { harnessCredentialOf } from "../../platform/nats-auth/server-keys.ts";
import { EventId, type DroverEvent, type EventOf } from "../../contracts/index.ts";
import { commandTokenFor } from "../../platform/command-token.ts";
import {
  createProcessStrategy,
  type ProcessHostStrategy,
  type ProcessStrategyOptions,
} from "../../platform/hosts/process-strategy.ts";
import type { HostStrategy } from "../../platform/hosts/types.ts";
import {
  createProvisioner,
  randomSuffix,
  type Provisioner,
  type ProvisionerDeps,
  type WarmSlot,
} from "../../services/provisioner/index.ts";
import {
  createEventStore,
  runtimeQuotaRef,
  runtimeRef,
  scaleOutRef,
  type EventStore,
  type StoredEvent,
} from "../../streams/index.ts";
import { exampleEvent } from "./example-events.ts";
import { RUNTIME_LOGS } from "./host-processes.ts";
import { uniqueName } from "./isolation.ts";
import { eventually, freshStreams, type StreamsFixture } from "./streams.ts";

type Events = readonly { readonly event: DroverEvent }[];

/** The runtime a settled scale-out request's `scaleout.fulfilled` names; undefined when it was not fulfilled. */
export function fulfilledRuntime(events: Events): string | undefined {
  const e = events.find((s) => s.event.type === "scaleout.fulfilled")?.event;
  return e?.type === "scaleout.fulfilled" ? (e.data.runtimeInstanceId as string) : undefined;
}

/** The data of a runtime's `runtime.host-started`, if its events hold one. */
export function hostStartedData(events: Events): EventOf<"runtime.host-started">["data"] | undefined {
  const e = events.find((s) => s.event.type === "runtime.host-started")?.event;
  return e?.type === "runtime.host-started" ? e.data : undefined;
}

/**
 * The runtime slot a direct `pool.claim` takes (runtime-slot.ts): the prefix `rt-<tenant>`'s quota
 * aggregate, expected empty, so a test claim for a tenant that started nothing yet commits.
 */
export function firstSlotOf(tenantId: string): WarmSlot {
  const ref = runtimeQuotaRef(tenantId, `rt-${tenantId}`);
  return {
    slot: { ref, expectedSeq: 0 },
    taken: (member) => ({
      ref,
      expectedSeq: 0,
      events: [
        {
          ...exampleEvent("quota.runtime-slot-taken"),
          eventId: EventId.parse(uniqueName("ev")),
          tenantId,
          data: { ...exampleEvent("quota.runtime-slot-taken").data, warmPoolMember: member },
        } as DroverEvent,
      ],
    }),
  };
}

export const TEST_COMMAND_SECRET = "provisioner-host-test-secret-0123456789";

/** A provisioner over a fresh stream layout, with its own process strategy (real runtimes by default). */
export interface ProvisionerFixture {
  readonly streams: StreamsFixture;
  readonly store: EventStore;
  readonly streamTag: string;
  /** `wrap` lets a test put a lying strategy in front of the real one (the real one is still cleaned up). */
  provisioner(
    patch?: Partial<ProvisionerDeps>,
    strategyOpts?: ProcessStrategyOptions,
    wrap?: (s: HostStrategy) => HostStrategy,
  ): { provisioner: Provisioner; strategy: ProcessHostStrategy; deps: ProvisionerDeps };
  /** Appends a `scaleout requested` for a fresh request id of `tenantId`; returns it as stored. */
  request(
    tenantId: string,
    controlPlaneId: string,
    policy?: Partial<EventOf<"scaleout.requested">["data"]["policy"]>,
    patch?: Partial<EventOf<"scaleout.requested">["data"]>,
  ): Promise<StoredEvent>;
  /** The request's events once it is settled (fulfilled/rejected/expired), waiting up to `timeoutMs`. */
  settled(tenantId: string, requestId: string, timeoutMs?: number): Promise<readonly StoredEvent[]>;
  runtimeEvents(runtimeInstanceId: string): Promise<readonly StoredEvent[]>;
  close(): Promise<void>;
}

/** Starts the fixture; `close()` kills every runtime its strategies spawned and deletes the streams. */
export async function provisionerFixture(natsUrl: string): Promise<ProvisionerFixture> {
  const streams = await freshStreams(natsUrl, "prov");
  const store = createEventStore(streams.nc, streams.layout);
  const streamTag = streams.layout.eventPrefix.replace(/\.drover$/, "");
  const made: { provisioner: Provisioner; strategy: ProcessHostStrategy }[] = [];
  return {
    streams,
    store,
    streamTag,
    provisioner(patch = {}, strategyOpts = {}, wrap = (s) => s) {
      const strategy = createProcessStrategy({ startupTimeoutMs: 60_000, logDir: RUNTIME_LOGS, ...strategyOpts });
      const deps: ProvisionerDeps = {
        store,
        layout: streams.layout,
        strategies: new Map([["process", wrap(strategy)]]),
        instanceId: uniqueName("prov"),
        natsUrl,
        natsCredsFor: () => harnessCredentialOf(natsUrl),
        streamTag,
        heartbeatMs: 500,
        clock: { now: () => new Date() },
        newEventId: randomUUID,
        newSuffix: randomSuffix,
        commandTokenFor: (id) => commandTokenFor(TEST_COMMAND_SECRET, id),
        probeBudgetMs: 20_000,
        killBudgetMs: 15_000,
        maxConcurrentHostStartups: 2,
        log: () => undefined,
        ...patch,
      };
      const provisioner = createProvisioner(deps);
      made.push({ provisioner, strategy });
      return { provisioner, strategy, deps };
    },
    async request(tenantId, controlPlaneId, policy = {}, patch = {}) {
      const base = exampleEvent("scaleout.requested");
      const requestId = uniqueName("so");
      const e = {
        ...base,
        eventId: EventId.parse(uniqueName("ev")),
        tenantId,
        correlationId: requestId,
        data: {
          ...base.data,
          requestId,
          controlPlaneId,
          expiresAt: new Date(Date.now() + 300_000).toISOString(),
          sizing: { workers: 1, maxConcurrentRuns: 1, localQueueCapacity: 2, maxWorkersPerRun: 1 },
          ...patch,
          policy: { ...base.data.policy, runtimeInstanceIdPrefix: `rt-${tenantId}`, ...policy },
        },
      } as DroverEvent;
      const ref = scaleOutRef(tenantId, requestId);
      await store.append(ref, e, { expectedSeq: 0 });
      return (await store.read(ref)).events[0] as StoredEvent;
    },
    settled(tenantId, requestId, timeoutMs = 120_000) {
      return eventually(
        `request ${requestId} settled`,
        async () => {
          const h = await store.read(scaleOutRef(tenantId, requestId));
          return h.events.some((s) =>
            ["scaleout.fulfilled", "scaleout.rejected", "scaleout.expired"].includes(s.event.type),
          )
            ? h.events
            : undefined;
        },
        timeoutMs,
      );
    },
    async runtimeEvents(id) {
      return (await store.read(runtimeRef(id))).events;
    },
    async close() {
      for (const m of made) {
        m.provisioner.close();
        await m.strategy.killAll();
      }
      await streams.close();
    },
  };
}
