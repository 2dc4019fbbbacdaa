import type { JetStreamManager } from "@nats-io/jetstream";
import {
  ensureConsumer,
  runConsumer,
  type ConsumerRunner,
  type NatsHandle,
  type StreamLayout,
} from "../../../streams/index.ts";
import type { Provisioner } from "./provisioner.ts";
import { isNotFound, scaleOutConsumer } from "../../../platform/nats-setup.ts";

export { scaleOutConsumer };

/**
 * Requests a replica holds beyond its start slots and pool members: those waiting in its start gate
 * for a slot or a member (holding neither, a promise each). Without them, requests waiting for the
 * pool to refill held every pull loop and a recovery scale-out was not even observed for 10 s (P=5
 * proof, warm pool 10: 15 first scale-outs at once), though a member it could claim at once came
 * ready meanwhile. Cold starts stay bounded by the start slots.
 */
export const WAITING_REQUESTS = 64;

/**
 * The requests a provisioner drives at once (its runner's concurrency): one per cold host start it may drive at once
 * (`maxConcurrentHostStartups`), one per warm pool member it keeps, so that a request a warm
 * member can serve (a recovery scale-out) is pulled while cold starts hold every start slot, and
 * {@link WAITING_REQUESTS} for requests waiting in the start gate.
 */
export function scaleOutPullLoops(
  maxConcurrentHostStartups: number,
  warmPool: Readonly<Record<string, number>>,
): number {
  return maxConcurrentHostStartups + Object.values(warmPool).reduce((a, n) => a + n, 0) + WAITING_REQUESTS;
}

/**
 * Checks the durable consumer exists (platform/nats-setup.ts creates it) and runs one runner on it that drives up to
 * `parallel` deliveries at once (`backoffMs`: the redelivery delays, tests only): `parallel` ({@link scaleOutPullLoops}) bounds how many requests this replica drives
 * at once (cold host starts among them are bounded by the provisioner's start slots). Returns the runners; stop them to let in-flight handlers settle their deliveries.
 */
export async function consumeScaleOutRequests(
  nats: { readonly jsm: JetStreamManager; readonly nc: NatsHandle },
  layout: StreamLayout,
  provisioner: Provisioner,
  parallel: number,
  ackWaitMs?: number,
  backoffMs?: readonly number[],
  log?: (msg: string, fields: Record<string, unknown>) => void,
): Promise<ConsumerRunner[]> {
  const spec = scaleOutConsumer(layout, ackWaitMs);
  const handle = nats.nc;
  // Setup creates the durable (only its identity may); an open test server gets it created here.
  await nats.jsm.consumers.info(layout.eventStream, spec.name).catch(async (e: unknown) => {
    if (!isNotFound(e)) throw e;
    await ensureConsumer(nats.jsm, layout, spec);
  });
  // One runner handling up to `parallel` requests at once, not `parallel` runners of one: with 132 of
  // them, a request sometimes waited seconds though most runners were idle (P=20 proof: some recovery
  // scale-outs reached their handler 3–15 s after the request; streams/consumer-runner.ts `concurrency`).
  return Promise.all(
    [parallel].map((concurrency) =>
      runConsumer(
        handle,
        layout,
        spec,
        // The last delivery closes a request it cannot drive (exhausted.ts) instead of leaving it open.
        (e, delivery) => provisioner.handle(e, { last: delivery.deliveryCount >= (spec.maxDeliver ?? 1) }),
        {
          concurrency,
          ...(backoffMs ? { backoffMs } : {}),
          // A failed delivery is said (nak: redelivered later; term: never again), with its error.
          ...(log
            ? {
                onOutcome: (o) => {
                  if (o.outcome.kind !== "ack")
                    log("scale-out delivery failed", {
                      seq: o.seq,
                      deliveryCount: o.deliveryCount,
                      outcome: o.outcome,
                      err: String((o.error as Error)?.message ?? o.error),
                    });
                },
              }
            : {}),
        },
      ),
    ),
  );
}
