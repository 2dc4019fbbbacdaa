import { jetstream } from "@nats-io/jetstream";
import type { FastifyInstance } from "fastify";
import type { z } from "zod";
import { DroverConfig, type TenantSettings } from "../../contracts/index.ts";
import {
  tokenTable,
  buildApp,
  replayCapacityReader,
  jetStreamFeed,
  startOpenRunsProjection,
  type OpenRunsProjection,
  type ReadModels,
} from "../../services/api/index.ts";
import { createEventStore } from "../../streams/index.ts";
import { createStepCacheStore } from "../../platform/step-cache-store.ts";
import type { EventStore } from "../../streams/types.ts";
import type { Clock } from "../../platform/clock.ts";
import { freshStreams, type StreamsFixture } from "./streams.ts";

/** Bearer tokens of the API fixtures: two tenants and an operator. */
export const TOKENS = {
  acme: "token-acme-0000000000001",
  globex: "token-globex-000000000001",
  operator: "token-operator-0000000001",
  /** acme tokens with a name (and alice a role), for wait resolvers (docs/control-flow.md "Waits"). */
  acmeAlice: "token-acme-alice-00000001",
  acmeBob: "token-acme-bob-0000000001",
} as const;
export const auth = (who: keyof typeof TOKENS) => ({ authorization: `Bearer ${TOKENS[who]}` });

/** The API under test on its own streams, plus the handles a test needs to look underneath it. */
export interface ApiFixture extends StreamsFixture {
  readonly app: FastifyInstance;
  readonly store: EventStore;
  /** Messages in the event stream: proves whether a request wrote anything. */
  messageCount(): Promise<number>;
}

/**
 * Builds the API over a fresh tagged layout on the real nats-server at `natsUrl`, with a fixed
 * clock and counting id generator. `tenants` are configured tenant settings; `quota` starts the
 * open-runs projection the API uses for `overQuota: "reject"` and the queued-run cap (main.ts always starts it); `readModels` backs the forensics queries.
 */
export async function apiFixture(
  natsUrl: string,
  opts: {
    tenants?: Array<Partial<TenantSettings>>;
    quota?: boolean;
    readModels?: ReadModels;
    /** DROVER_CONFIG `api` settings (rate limit, event-feed cap). */
    api?: z.input<typeof DroverConfig>["api"];
    /** The API's clock (default: fixed at 2026-05-06T07:08:09Z). */
    clock?: Clock;
    /** Wraps the store the API appends with (the test's own handle stays the plain store). */
    wrapStore?: (store: EventStore) => EventStore;
  } = {},
): Promise<ApiFixture> {
  const streams = await freshStreams(natsUrl, "api");
  const store = createEventStore(streams.nc, streams.layout);
  const js = jetstream(streams.nc);
  const config = DroverConfig.parse({
    controlPlaneId: "cp-test",
    tenants: opts.tenants ?? [],
    ...(opts.api ? { api: opts.api } : {}),
    tokens: {
      [TOKENS.acme]: { role: "tenant", tenantId: "acme" },
      [TOKENS.globex]: { role: "tenant", tenantId: "globex" },
      [TOKENS.operator]: { role: "operator", name: "ops" },
      [TOKENS.acmeAlice]: { role: "tenant", tenantId: "acme", name: "alice", roles: ["approver"] },
      [TOKENS.acmeBob]: { role: "tenant", tenantId: "acme", name: "bob" },
    },
  });
  const openRuns: OpenRunsProjection | undefined = opts.quota
    ? await startOpenRunsProjection(js, streams.jsm, streams.layout)
    : undefined;
  let n = 0;
  const app = await buildApp({
    config,
    tokens: tokenTable(config.tokens, { allowPlaintext: true }),
    layout: streams.layout,
    store: opts.wrapStore ? opts.wrapStore(store) : store,
    feed: jetStreamFeed(js, streams.jsm, streams.layout),
    capacity: replayCapacityReader(store, streams.jsm, streams.layout),
    openRuns,
    ...(opts.readModels ? { readModels: opts.readModels } : {}),
    clock: opts.clock ?? { now: () => new Date("2026-05-06T07:08:09.000Z") },
    newId: () => `id${process.pid}x${++n}`,
    instanceId: "api-test",
    stepCache: createStepCacheStore(streams.nc, streams.layout),
  });
  return {
    ...streams,
    app,
    store,
    messageCount: async () => (await streams.jsm.streams.info(streams.layout.eventStream)).state.messages,
    async close() {
      // undici may hold a pre-opened socket that never carried a request; close() would wait for it.
      app.server.closeAllConnections();
      await app.close();
      await openRuns?.stop();
      await streams.close();
    },
  };
}

/** A small valid DAG body. */
export const validDag = {
  name: "t",
  steps: [
    { id: "a", kind: "compute" },
    { id: "b", kind: "sleep", dependsOn: ["a"], params: { durationMs: 1 } },
  ],
};
