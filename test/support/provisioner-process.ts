import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { jetstreamManager } from "@nats-io/jetstream";
import { credentialOf } from "../../platform/nats-auth/credentials.ts";
import { serverKeysOf } from "../../platform/nats-auth/server-keys.ts";
import { connectNats } from "../../platform/nats-connect.ts";
import { setupNats } from "../../platform/nats-setup.ts";
import { RUNTIME_LOGS } from "./host-processes.ts";
import { TEST_COMMAND_SECRET, type ProvisionerFixture } from "./provisioner-fixture.ts";

/**
 * Real provisioner processes (services/provisioner/main.ts) on `f`'s streams, with `config` as their
 * DROVER_CONFIG. The durable consumer is created by the setup identity first, as in make run (the
 * provisioner may not create it). `start()` spawns one; `killAll()` (the teardown) SIGKILLs the ones still
 * running and removes the config's temporary directory (left in /tmp by every run before).
 */
export async function provisionerProcesses(natsUrl: string, f: ProvisionerFixture, config: Record<string, unknown>) {
  const setup = await connectNats({ servers: natsUrl, creds: credentialOf(serverKeysOf(natsUrl)!, "setup") });
  await setupNats(await jetstreamManager(setup), f.streams.layout, 3000);
  await setup.close();
  const configPath = join(mkdtempSync(join(tmpdir(), "drover-prov-")), "drover.json");
  writeFileSync(configPath, JSON.stringify(config));
  const started: ChildProcess[] = [];
  return {
    start(): ChildProcess {
      const keys = serverKeysOf(natsUrl)!;
      const child = spawn(process.execPath, ["--import", "tsx", "services/provisioner/main.ts"], {
        env: {
          PATH: process.env.PATH ?? "",
          HOME: process.env.HOME ?? "/tmp",
          DROVER_CONFIG: configPath,
          NATS_URL: natsUrl,
          // Its own identity, and the callout key it answers runtimes' connections with (authentication is on).
          NATS_CREDS: credentialOf(keys, "provisioner"),
          DROVER_NATS_CALLOUT_SEED: keys.calloutSeed,
          DROVER_STREAM_TAG: f.streamTag,
          DROVER_SCALEOUT_ACK_WAIT_MS: "3000",
          DROVER_COMMAND_SECRET: TEST_COMMAND_SECRET,
          DROVER_RUNTIME_LOG_DIR: RUNTIME_LOGS,
          LOG_LEVEL: "warn",
        },
        stdio: ["ignore", "ignore", "inherit"],
      });
      started.push(child);
      return child;
    },
    killAll(): void {
      for (const p of started) if (p.exitCode === null && p.signalCode === null) p.kill("SIGKILL");
      rmSync(dirname(configPath), { recursive: true, force: true });
    },
  };
}

/** Resolves once `c` has exited (at once if it has). */
export const exitedProcess = (c: ChildProcess) =>
  new Promise<void>((ok) => (c.exitCode !== null || c.signalCode !== null ? ok() : c.once("exit", () => ok())));
