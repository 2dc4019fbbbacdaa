import type { JetStreamManager } from "@nats-io/jetstream";
import {
  ensureConsumer,
  eventTypeFilter,
  runConsumer,
  type ConsumerRunner,
  type DurableConsumerSpec,
  type NatsHandle,
  type StreamLayout,
} from "../../../streams/index.ts";
import type { Provisioner } from "./provisioner.ts";

/**
 * The one shared durable consumer of `scaleout requested` (admission-and-capacity.md "Scale-out"):
 * every provisioner replica pulls from it, so each request is handled by one replica at a time,
 * and a replica that dies mid-request has its delivery redelivered to another after `ackWaitMs`
 * (the runner keeps a live handler's delivery with `working()`).
 */
export const scaleOutConsumer = (layout: StreamLayout, ackWaitMs = 30_000): DurableConsumerSpec => ({
  name: "provisioner-scaleout-requested",
  filter: eventTypeFilter(layout, "scaleout.requested"),
  ackWaitMs,
  maxDeliver: 10,
});

/**
 * Creates (or accepts) the durable consumer and runs `parallel` pull loops on it, one delivery each
 * at a time: `parallel` (maxConcurrentHostStartups) bounds how many requests this replica drives
 * at once. Returns the runners; stop them to let in-flight handlers settle their deliveries.
 */
export async function consumeScaleOutRequests(
  nats: { readonly jsm: JetStreamManager; readonly nc: NatsHandle },
  layout: StreamLayout,
  provisioner: Provisioner,
  parallel: number,
  ackWaitMs?: number,
): Promise<ConsumerRunner[]> {
  const spec = scaleOutConsumer(layout, ackWaitMs);
  const handle = nats.nc;
  await ensureConsumer(nats.jsm, layout, spec);
  return Promise.all(
    Array.from({ length: parallel }, () => runConsumer(handle, layout, spec, (e) => provisioner.handle(e))),
  );
}
