import { spawn } from "node:child_process";
import { resolve } from "node:path";
import { jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import { type NatsConnection } from "@nats-io/transport-node";
import { connectHarness } from "../../platform/nats-auth/server-keys.ts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { isDroverError } from "../../contracts/index.ts";
import { createEventStore } from "../../streams/event-store.ts";
import { ensureStreams } from "../../streams/ensure-streams.ts";
import { taggedLayout } from "../../streams/layout.ts";
import { uniqueName } from "../support/isolation.ts";
import { startNats, type RunningServer } from "../../platform/local-servers.ts";

const ROOT = resolve(import.meta.dirname, "../..");
const REFUSAL = "nats-server 2.9.10 is not supported: drover needs nats-server >= 2.12.0";

/** Debian's nats-server 2.9.10 (scripts/install-tools.sh extracts it): JetStream works, atomic batches do not exist. */
describe("drover refuses a real nats-server older than 2.12 (Debian's 2.9.10) before changing anything on it", () => {
  let old: RunningServer;
  let nc: NatsConnection;
  let jsm: JetStreamManager;
  beforeAll(async () => {
    old = await startNats({ binary: "nats-server-debian", auth: false });
    nc = await connectHarness({ servers: old.url });
    jsm = await jetstreamManager(nc);
  });
  afterAll(async () => {
    await nc?.close();
    await old?.stop();
  });

  it("the server really is 2.9.10 with JetStream enabled", async () => {
    expect(nc.info?.version).toBe("2.9.10");
    expect((await jsm.getAccountInfo()).streams).toBe(0);
  });

  it("ensureStreams rejects with server-version-unsupported naming the version and the minimum, and creates no stream", async () => {
    const err = await ensureStreams(jsm, taggedLayout(uniqueName("old"))).catch((e: unknown) => e);
    expect(isDroverError(err, "server-version-unsupported")).toBe(true);
    expect((err as Error).message).toContain(REFUSAL);
    expect((await jsm.getAccountInfo()).streams).toBe(0);
  });

  it("createEventStore refuses the connection at construction, before any operation", () => {
    let err: unknown;
    try {
      createEventStore(nc, taggedLayout(uniqueName("old")));
    } catch (e) {
      err = e;
    }
    expect(isDroverError(err, "server-version-unsupported")).toBe(true);
    expect((err as Error).message).toContain(REFUSAL);
  });

  it("a service process started against it exits 1 with the one clear line on stderr", async () => {
    const child = spawn(process.execPath, ["--import", "tsx", "services/capacity/main.ts"], {
      cwd: ROOT,
      env: {
        ...process.env,
        NATS_URL: old.url,
        REDIS_URL: "redis://127.0.0.1:1",
        DROVER_STREAM_TAG: uniqueName("old"),
        DROVER_DEV: "1",
      },
      stdio: ["ignore", "ignore", "pipe"],
    });
    let stderr = "";
    child.stderr.on("data", (d: Buffer) => {
      stderr += d.toString();
    });
    const code = await new Promise<number | null>((ok) => child.once("exit", ok));
    expect(code).toBe(1);
    expect(stderr).toContain(`capacity: cannot start: ${REFUSAL}`);
    expect((await jsm.getAccountInfo()).streams).toBe(0);
  });
});
