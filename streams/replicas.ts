/** The most replicas JetStream allows a stream (nats-server `StreamMaxReplicas`). */
export const MAX_STREAM_REPLICAS = 5;

/**
 * Replicas of every stream drover creates, from the one setting `NATS_REPLICAS` (default 1: a
 * single server refuses more with 10074; 3 on a 3-node cluster, `NATS_CLUSTER=3` sets it). The
 * setup identity creates the streams with it and every service verifies them with it
 * (ensure-streams.ts), so all parties must see the same value.
 */
export function streamReplicas(env: Readonly<Record<string, string | undefined>> = process.env): number {
  const raw = env.NATS_REPLICAS;
  if (raw === undefined || raw === "") return 1;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1 || n > MAX_STREAM_REPLICAS)
    throw new RangeError(`NATS_REPLICAS must be an integer from 1 to ${MAX_STREAM_REPLICAS}, got ${raw}`);
  return n;
}
