import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { NatsConnection } from "@nats-io/transport-node";
import { startNats, type RunningServer } from "../../platform/local-servers.ts";
import { connectHarness } from "../../platform/nats-auth/server-keys.ts";
import { memoryCheckpointStore } from "../../streams/checkpoints.ts";
import { createEventStore } from "../../streams/event-store.ts";
import { createProjectionRunner, type Projection } from "../../streams/projection-runner.ts";
import { runRef } from "../../streams/subjects.ts";
import { ids } from "../support/example-events.ts";
import { event, eventually, freshStreams, type StreamsFixture } from "../support/streams.ts";
import { freezer } from "../support/freeze.ts";

/**
 * A projection runner's live reads when JetStream does not answer: a private nats-server frozen with
 * SIGSTOP (its connections stay open, requests time out), the runner on a connection of its own so
 * that its requests are the only ones counted. The live loop reads in bursts (streams/live-bursts.ts):
 * at a linger window's end it asks for the consumer's info, a request that can time out.
 */
describe("a projection runner's live reads against a nats-server that stops answering", () => {
  let server: RunningServer;
  let fx: StreamsFixture;
  let rc: NatsConnection;
  let next = 0;
  const { freeze, thaw } = freezer(() => server.pid);
  beforeEach(async () => {
    server = await startNats();
    fx = await freshStreams(server.url);
    rc = await connectHarness({ servers: server.url });
  });
  afterEach(async () => {
    thaw();
    await rc?.close();
    await fx?.close();
    await server?.stop();
  });

  const append = async () =>
    (
      await createEventStore(fx.nc, fx.layout).append(runRef(ids.tenant, `fault-${next++}`), event("run.submitted"), {
        expectedSeq: 0,
      })
    ).seq;

  /** A runner recording what it applies and each restart, its requests timing out after 1 s. */
  function recording(name: string) {
    const applied: number[] = [];
    const restarts: unknown[] = [];
    const projection: Projection = { name, apply: (e) => void applied.push(e.seq) };
    const runner = createProjectionRunner(rc, fx.layout, projection, memoryCheckpointStore(), {
      lingerMs: 100,
      jetStream: { timeout: 1_000 },
      onRestart: (e) => restarts.push(e),
    });
    return { runner, applied, restarts };
  }

  /**
   * Applies one event, then freezes the server before the event's linger window ends; resolves once
   * the window's read (a consumer info) has been sent to the frozen server.
   */
  async function readingFrozen(r: ReturnType<typeof recording>): Promise<number> {
    void r.runner.start();
    const first = await append();
    await r.runner.waitFor(first, 60_000);
    // `waitFor` resolves as the event is applied, before its window's timer can fire.
    const sent = rc.stats().outMsgs;
    freeze();
    await eventually(
      "the window's read sent to the frozen server",
      async () => (rc.stats().outMsgs > sent ? true : undefined),
      60_000,
    );
    return first;
  }

  it("a stop while a live read waits on JetStream ends the runner cleanly: the read's timeout is the stop's, not a failure", async () => {
    const r = recording("stop-frozen");
    const first = await readingFrozen(r);
    // The forensics projector stops its runner for each rebuild: a consumer info that timed out
    // under that stop ended the projection for good (proof `nats-leader-kill`, session 28).
    await r.runner.stop();
    await expect(r.runner.done).resolves.toBeUndefined();
    expect(r.applied).toEqual([first]);
  });

  it("live, reads that time out restart the loop from its position: once JetStream answers again every event is applied once, in order", async () => {
    const r = recording("live-frozen");
    const first = await readingFrozen(r);
    await eventually(
      "a timed-out read restarting the live loop",
      async () => (r.restarts.length > 0 ? true : undefined),
      60_000,
    );
    thaw();
    const more: number[] = [];
    for (let i = 0; i < 3; i++) more.push(await append());
    await r.runner.waitFor(more.at(-1)!, 60_000);
    expect(r.applied).toEqual([first, ...more]);
    await r.runner.stop();
    await expect(r.runner.done).resolves.toBeUndefined();
  });
});
