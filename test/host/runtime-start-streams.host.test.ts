import { jetstreamManager } from "@nats-io/jetstream";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { connectHarness } from "../../platform/nats-auth/server-keys.ts";
import { ensureStreams, taggedLayout, type StreamLayout } from "../../streams/index.ts";
import { uniqueName } from "../support/isolation.ts";
import { startRuntimeProcess } from "../support/runtime-process.ts";

// Boundary: a real runtime process and a real nats-server whose event stream was changed behind
// drover's back. The runtime checks the streams while it sets up its listeners (start.ts): it must
// still refuse to serve commands, never printing `listening`, when that check fails.
const url = () => inject("natsUrl");
const tag = uniqueName("rtss");
let layout: StreamLayout;
beforeAll(async () => {
  const nc = await connectHarness({ servers: url() });
  try {
    const jsm = await jetstreamManager(nc);
    layout = taggedLayout(tag);
    await ensureStreams(jsm, layout);
    const info = await jsm.streams.info(layout.eventStream);
    await jsm.streams.update(layout.eventStream, { ...info.config, max_age: 3_600_000_000_000 });
  } finally {
    await nc.close();
  }
});
afterAll(async () => {
  const nc = await connectHarness({ servers: url() });
  const jsm = await jetstreamManager(nc);
  for (const s of [layout.eventStream, layout.heartbeatStream, layout.deadLetterStream])
    await jsm.streams.delete(s).catch(() => undefined);
  await nc.close();
});

describe("a runtime's start against an event stream whose settings differ from drover's definition", () => {
  it("exits naming the difference and never prints `listening` (its command listener is bound only after the stream check)", async () => {
    const start = startRuntimeProcess({
      natsUrl: url(),
      streamTag: tag,
      runtimeInstanceId: uniqueName("rt-ss"),
      transport: "http",
      startTimeoutMs: 20_000,
    });
    await expect(start).rejects.toThrow(/exited before the expected line.*max_age: want 0/s);
  });
});
