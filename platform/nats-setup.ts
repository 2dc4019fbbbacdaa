import { JetStreamApiError, type JetStreamManager } from "@nats-io/jetstream";
import {
  ensureConsumer,
  ensureStreams,
  eventTypeFilter,
  type DurableConsumerSpec,
  type StreamLayout,
} from "../streams/index.ts";
import { outputsStreamConfig } from "./output-store.ts";
import { archiveStreamConfig } from "./archive-store.ts";
import { stepCacheStreamConfig } from "./step-cache-store.ts";
import { leaseStreamConfig } from "./lease.ts";
import { snapshotStreamConfig } from "./snapshots/store.ts";
import { SCALE_OUT_DURABLE } from "./nats-auth/rights.ts";
import type { StreamLimits } from "../streams/limits.ts";
import { isJetStreamUnavailable } from "../streams/nats-errors.ts";

/**
 * The one shared durable consumer of `scaleout requested` (admission-and-capacity.md "Scale-out"):
 * every provisioner replica pulls from it, so each request is handled by one replica at a time,
 * and a replica that dies mid-request has its delivery redelivered to another after `ackWaitMs`.
 */
export const scaleOutConsumer = (layout: StreamLayout, ackWaitMs = 30_000): DurableConsumerSpec => ({
  name: SCALE_OUT_DURABLE,
  filter: eventTypeFilter(layout, "scaleout.requested"),
  ackWaitMs,
  maxDeliver: 10,
});

const NOT_FOUND = new Set([10014, 10059]);
export const isNotFound = (e: unknown): boolean => e instanceof JetStreamApiError && NOT_FOUND.has(e.code);

/**
 * What only the `setup` identity may do (docs/nats-identities.md): create (or verify) drover's
 * streams, the provisioner's durable consumer, the outputs stream (output-store.ts), the step
 * cache stream (step-cache-store.ts), the archive (archive-store.ts), the lease stream (lease.ts)
 * and the snapshot stream (snapshots/store.ts). `drover admin
 * setup` runs it before the services start (`make run`, the manifests' setup Job, the test harness);
 * services only check that what they use exists. It alone brings the heartbeat and dead-letter
 * streams' limits to `limits` (streams/limits.ts; the defaults when absent), on an existing
 * deployment too (docs/retention.md). Every step is idempotent, and a step JetStream does not answer
 * (a request timing out, no responders, a cluster with no leader yet: a freshly started or electing
 * cluster, a busy machine; a replicated stream refused with "peer offline" because the meta leader has
 * not had a fresh node's first statsz) is retried, the whole setup again, for `patience.withinMs` (60 s):
 * the nats-leader-kill proof failed in its setup once on a timed-out R3 stream add, once on "peer offline".
 */
export async function setupNats(
  jsm: JetStreamManager,
  layout: StreamLayout,
  ackWaitMs?: number,
  limits?: StreamLimits,
  compactable = false,
  patience: SetupPatience = {},
): Promise<void> {
  const deadline = Date.now() + (patience.withinMs ?? 60_000);
  for (;;) {
    try {
      return await setupOnce(jsm, layout, ackWaitMs, limits, compactable);
    } catch (e) {
      if (!isJetStreamUnavailable(e) || Date.now() >= deadline) throw e;
      patience.onRetry?.(e);
      await new Promise((r) => setTimeout(r, 500));
    }
  }
}

/** How long setupNats retries what JetStream did not answer, and who hears of each retry. */
export interface SetupPatience {
  readonly withinMs?: number;
  readonly onRetry?: (e: unknown) => void;
}

async function setupOnce(
  jsm: JetStreamManager,
  layout: StreamLayout,
  ackWaitMs: number | undefined,
  limits: StreamLimits | undefined,
  compactable: boolean,
): Promise<void> {
  await ensureStreams(jsm, layout, { adjustLimits: true, compactable, ...(limits ? { limits } : {}) });
  await ensureConsumer(jsm, layout, scaleOutConsumer(layout, ackWaitMs));
  // The archive of compacted runs exists on every deployment (empty without compaction): docs/retention.md.
  for (const config of [
    outputsStreamConfig(layout),
    stepCacheStreamConfig(layout),
    archiveStreamConfig(layout),
    leaseStreamConfig(layout),
    snapshotStreamConfig(layout),
  ])
    await jsm.streams.info(config.name).catch(async (e: unknown) => {
      if (!isNotFound(e)) throw e;
      await jsm.streams.add(config);
    });
}
