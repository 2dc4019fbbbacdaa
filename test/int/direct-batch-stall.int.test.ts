import { createServer, connect, type Server, type Socket } from "node:net";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { afterEach, beforeEach, describe, expect, inject, it } from "vitest";
import { connectNats } from "../../platform/nats-connect.ts";
import { harnessCredentialOf } from "../../platform/nats-auth/server-keys.ts";
import { readRaw } from "../../streams/stored.ts";
import { freshStreams, type StreamsFixture } from "../support/streams.ts";

/**
 * A TCP relay between a client and the real nats-server whose server-to-client direction can be
 * stalled after a byte budget: the server stops answering in the middle of a batch (a node frozen
 * or killed mid-answer), while the connection stays open.
 */
async function stallingRelay(target: URL): Promise<{
  url: string;
  stallAfter(bytes: number): void;
  resume(): void;
  held(): number;
  close(): Promise<void>;
}> {
  let budget = Number.POSITIVE_INFINITY;
  const heldChunks: { to: Socket; chunk: Buffer }[] = [];
  const sockets: Socket[] = [];
  const server: Server = createServer((client) => {
    const up = connect(Number(target.port), target.hostname);
    sockets.push(client, up);
    client.on("data", (c) => up.write(c));
    up.on("data", (c: Buffer) => {
      if (heldChunks.length > 0 || c.length > budget) {
        const pass = heldChunks.length > 0 ? 0 : Math.max(0, budget);
        if (pass > 0) client.write(c.subarray(0, pass));
        heldChunks.push({ to: client, chunk: c.subarray(pass) });
        budget = 0;
        return;
      }
      budget -= c.length;
      client.write(c);
    });
    for (const s of [client, up]) s.on("error", () => undefined);
    client.on("close", () => up.destroy());
    up.on("close", () => client.destroy());
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const port = (server.address() as { port: number }).port;
  return {
    url: `nats://127.0.0.1:${port}`,
    stallAfter: (bytes) => void (budget = bytes),
    resume() {
      budget = Number.POSITIVE_INFINITY;
      for (const { to, chunk } of heldChunks.splice(0)) to.write(chunk);
    },
    held: () => heldChunks.reduce((n, h) => n + h.chunk.length, 0),
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

describe("a batched Direct Get whose server stops answering mid-batch (real nats-server behind a stalling relay)", () => {
  let fx: StreamsFixture;
  let relay: Awaited<ReturnType<typeof stallingRelay>>;
  beforeEach(async () => {
    fx = await freshStreams(inject("natsUrl"), "stall");
    relay = await stallingRelay(new URL(inject("natsUrl")));
  });
  afterEach(async () => {
    relay.resume();
    await relay.close();
    await fx.close();
  });

  // nats.js (jetstream 3.x) gives a batch's inbox subscription a 5 s timeout and a callback; the
  // callback shadows the method that would cancel the timer on the first message, so the 5 s bound the
  // whole batch, not only its first answer. Session 30 suspected the opposite (a read left waiting for
  // ever by a server that stopped mid-batch); this holds the library to the bound drover relies on.
  it("fails as event-store-unavailable instead of waiting for ever, and the connection reads again once answers flow", async () => {
    const js = jetstream(fx.nc);
    const subject = `${fx.layout.eventPrefix}.stall.t1.a1.x`;
    const body = new Uint8Array(2_000).fill(97);
    for (let i = 0; i < 300; i++) await js.publish(subject, body);
    const nc = await connectNats({ servers: relay.url, creds: harnessCredentialOf(inject("natsUrl")) });
    try {
      const jsm = await jetstreamManager(nc);
      expect(await readRaw(jsm, fx.layout.eventStream, subject)).toHaveLength(300);

      // ~10 of the batch's 300 messages reach the client, then the server's answers stop.
      relay.stallAfter(20_000);
      await expect(readRaw(jsm, fx.layout.eventStream, subject)).rejects.toMatchObject({
        code: "event-store-unavailable",
      });
      expect(relay.held()).toBeGreaterThan(0); // the read was cut in the middle of its batch

      relay.resume();
      expect(await readRaw(jsm, fx.layout.eventStream, subject)).toHaveLength(300);
    } finally {
      await nc.close();
    }
  });
});
