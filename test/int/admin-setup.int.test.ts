import { jetstreamManager } from "@nats-io/jetstream";
import { afterAll, describe, expect, inject, it } from "vitest";
import { main } from "../../cli/drover.ts";
import { credentialOf } from "../../platform/nats-auth/credentials.ts";
import { connectHarness, serverKeysOf } from "../../platform/nats-auth/server-keys.ts";
import { scaleOutConsumer } from "../../platform/nats-setup.ts";
import { archiveStreamOf } from "../../platform/archive-store.ts";
import { outputsStreamOf } from "../../platform/output-store.ts";
import { stepCacheStreamOf } from "../../platform/step-cache-store.ts";
import { snapshotStreamOf } from "../../platform/snapshots/store.ts";
import { taggedLayout } from "../../streams/index.ts";
import { uniqueName } from "../support/isolation.ts";

/**
 * `drover admin setup` (what the manifests' setup Job runs) against a real nats-server with
 * authentication: as the setup identity it creates the streams, the provisioner's durable, the
 * outputs stream, the step cache stream and the snapshot stream, and again (idempotent); as a service identity the server refuses it.
 */
const url = () => inject("natsUrl");
const tag = uniqueName("setupjob");
const layout = taggedLayout(tag);
const streams = () => [
  layout.eventStream,
  layout.heartbeatStream,
  layout.deadLetterStream,
  outputsStreamOf(layout),
  stepCacheStreamOf(layout),
  archiveStreamOf(layout),
  snapshotStreamOf(layout),
];

async function setup(
  identity: "setup" | "api",
  extraEnv: Record<string, string> = {},
): Promise<{ code: number; out: string; err: string }> {
  let out = "";
  let err = "";
  const code = await main(["admin", "setup"], {
    out: (t) => (out += t),
    err: (t) => (err += t),
    env: {
      NATS_URL: url(),
      NATS_CREDS: credentialOf(serverKeysOf(url())!, identity),
      DROVER_STREAM_TAG: tag,
      ...extraEnv,
    },
  });
  return { code, out, err };
}

afterAll(async () => {
  const nc = await connectHarness({ servers: url() });
  const jsm = await jetstreamManager(nc);
  for (const s of streams()) await jsm.streams.delete(s).catch(() => undefined);
  await nc.close();
});

describe("drover admin setup (real nats-server, authentication on)", () => {
  it("is refused for a service identity: services hold no setup rights", async () => {
    const r = await setup("api");
    expect(r.code).toBe(3);
    expect(r.err).toMatch(/permission|authorization/i);
    const nc = await connectHarness({ servers: url() });
    await expect((await jetstreamManager(nc)).streams.info(layout.eventStream)).rejects.toThrow(/not found/i);
    await nc.close();
  });

  it("creates the streams, the provisioner's durable, the outputs, step cache and snapshot streams as the setup identity, and is idempotent", async () => {
    expect(await setup("setup")).toMatchObject({ code: 0, err: "" });
    const again = await setup("setup");
    expect(again.code).toBe(0);
    expect(again.out).toContain("are in place");
    const nc = await connectHarness({ servers: url() });
    const jsm = await jetstreamManager(nc);
    for (const s of streams()) expect((await jsm.streams.info(s)).config.name).toBe(s);
    expect((await jsm.consumers.info(layout.eventStream, scaleOutConsumer(layout).name)).name).toBe(
      scaleOutConsumer(layout).name,
    );
    await nc.close();
  });

  it("sets the dead-letter stream's limits from DROVER_DLQ_* on the existing stream, and refuses a bad limit (exit 2)", async () => {
    expect(await setup("setup", { DROVER_DLQ_MAX_MSGS: "1234" })).toMatchObject({ code: 0, err: "" });
    const nc = await connectHarness({ servers: url() });
    expect((await (await jetstreamManager(nc)).streams.info(layout.deadLetterStream)).config.max_msgs).toBe(1234);
    await nc.close();
    const bad = await setup("setup", { DROVER_DLQ_MAX_MSGS: "-1" });
    expect(bad.code).toBe(2);
    expect(bad.err).toMatch(/DROVER_DLQ_MAX_MSGS/);
  });
});
