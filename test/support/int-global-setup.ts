import type { TestProject } from "vitest/node";
import { startFerret, startNats, startRedis } from "../../platform/local-servers.ts";

declare module "vitest" {
  export interface ProvidedContext {
    natsUrl: string;
    mongoUrl: string;
    redisUrl: string;
  }
}

/**
 * One real nats-server, FerretDB and Redis per test run on free loopback ports. Tests isolate
 * themselves with fresh stream names / subject prefixes, database names and key prefixes
 * (test/support/isolation.ts), and stop nothing they did not start.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const [nats, mongo, redis] = await Promise.all([startNats(), startFerret(), startRedis()]);
  project.provide("natsUrl", nats.url);
  project.provide("mongoUrl", mongo.url);
  project.provide("redisUrl", redis.url);
  return async () => {
    await Promise.all([nats.stop(), mongo.stop(), redis.stop()]);
  };
}
