import type { TestProject } from "vitest/node";
import { startFerret, startNats, startRedis } from "../../platform/local-servers.ts";
import { natsClusterSize, startNatsCluster } from "../../platform/nats-cluster.ts";

declare module "vitest" {
  export interface ProvidedContext {
    natsUrl: string;
    mongoUrl: string;
    redisUrl: string;
  }
}

/**
 * `NATS_CLUSTER=3` runs the tier against a 3-node JetStream cluster (nats-cluster.ts) with every
 * stream R3 (NATS_REPLICAS, inherited by the workers and the processes tests spawn) instead.
 * One real nats-server, FerretDB and Redis per test run on free loopback ports. Tests isolate
 * themselves with fresh stream names / subject prefixes, database names and key prefixes
 * (test/support/isolation.ts), and stop nothing they did not start.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const size = natsClusterSize();
  if (size > 1) process.env.NATS_REPLICAS ??= String(size);
  const startNatsOf = () => (size > 1 ? startNatsCluster({ size }) : startNats());
  const [nats, mongo, redis] = await Promise.all([startNatsOf(), startFerret(), startRedis()]);
  project.provide("natsUrl", nats.url);
  project.provide("mongoUrl", mongo.url);
  project.provide("redisUrl", redis.url);
  return async () => {
    await Promise.all([nats.stop(), mongo.stop(), redis.stop()]);
  };
}
