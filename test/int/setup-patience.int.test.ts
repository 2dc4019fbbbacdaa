import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { startNats, type RunningServer } from "../../platform/local-servers.ts";
import { connectHarness } from "../../platform/nats-auth/server-keys.ts";
import { setupNats } from "../../platform/nats-setup.ts";
import { isJetStreamUnavailable } from "../../streams/nats-errors.ts";
import { taggedLayout } from "../../streams/index.ts";
import { uniqueName } from "../support/isolation.ts";
import { freezer } from "../support/freeze.ts";

/**
 * `setupNats` (what `drover admin setup` and every harness run first) against a private nats-server
 * frozen with SIGSTOP: its connections stay open and every JetStream request times out, as on a
 * cluster still electing its leaders or a machine too busy to answer in time (the nats-leader-kill
 * proof once failed in its setup on a timed-out stream add).
 */
describe("setupNats against a nats-server that does not answer for a while", () => {
  let server: RunningServer;
  let nc: NatsConnection;
  let jsm: JetStreamManager;
  const { freeze, thaw } = freezer(() => server.pid);
  beforeEach(async () => {
    server = await startNats();
    nc = await connectHarness({ servers: server.url });
    // Requests time out after 1 s (the manager's own API check runs here, before the freeze).
    jsm = await jetstreamManager(nc, { timeout: 1_000 });
  });
  afterEach(async () => {
    thaw();
    await nc?.close();
    await server?.stop();
  });

  it("given a request that times out, when the server answers again, then setup retries and creates every stream", async () => {
    freeze();
    const layout = taggedLayout(uniqueName("patient"));
    const retried: unknown[] = [];
    await setupNats(jsm, layout, undefined, undefined, false, {
      onRetry: (e) => {
        retried.push(e);
        thaw();
      },
    });
    expect(retried.length).toBeGreaterThanOrEqual(1);
    expect(isJetStreamUnavailable(retried[0])).toBe(true);
    for (const s of [layout.eventStream, layout.heartbeatStream, layout.deadLetterStream])
      expect((await jsm.streams.info(s)).config.name).toBe(s);
  }, 30_000);

  it("given no patience (withinMs 0), when a request times out, then setup fails with that timeout (what the retry rides)", async () => {
    freeze();
    const failure = await setupNats(jsm, taggedLayout(uniqueName("impatient")), undefined, undefined, false, {
      withinMs: 0,
    }).catch((e: unknown) => e);
    expect(isJetStreamUnavailable(failure)).toBe(true);
  }, 30_000);
});
