import { execFile } from "node:child_process";
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { loadAllYaml } from "@kubernetes/client-node";
import { afterAll, describe, expect, it } from "vitest";
import { toolsBin } from "../../platform/local-servers.ts";

const ROOT = resolve(import.meta.dirname, "../..");
const run = promisify(execFile);

/**
 * k8s/drover/15-nats.yaml's server configuration, checked by the real nats-server 2.15.3 (`-t`):
 * the ConfigMap's nats.conf with the Secret drover-nats-server that `scripts/nats-auth.ts
 * k8s-server-secret` generates included, as the StatefulSet mounts them (paths moved to a temp dir).
 */
describe("the NATS StatefulSet's configuration (ConfigMap + generated Secret) against the real nats-server", () => {
  let dir = "";
  afterAll(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it("is valid for nats-server, names the Pod as server_name and routes to the 3 Pods with the route user", async () => {
    dir = await mkdtemp(join(tmpdir(), "drover-k8s-nats-"));
    const node = (...args: string[]) =>
      run("node", ["--import", "tsx", "scripts/nats-auth.ts", ...args], { cwd: ROOT });
    await node("config", join(dir, "auth"), "127.0.0.1", "4222", join(dir, "store"));
    const secret = JSON.parse((await node("k8s-server-secret", join(dir, "auth"))).stdout) as {
      metadata: { name: string; namespace: string };
      stringData: Record<string, string>;
    };
    expect(secret.metadata).toEqual({ name: "drover-nats-server", namespace: "drover-deps" });
    const auth = JSON.parse(secret.stringData["auth.conf"]!) as { cluster: { routes: string[] }; accounts: object };
    expect(auth.cluster.routes.map((r) => r.replace(/\/\/route:[^@]+@/, "//route:***@"))).toEqual([
      "nats://route:***@nats-0.nats.drover-deps.svc:6222",
      "nats://route:***@nats-1.nats.drover-deps.svc:6222",
      "nats://route:***@nats-2.nats.drover-deps.svc:6222",
    ]);
    expect(Object.keys(auth.accounts)).toEqual(["DROVER", "SYS"]);
    const objects = loadAllYaml(await readFile(join(ROOT, "k8s/drover/15-nats.yaml"), "utf8")) as {
      kind: string;
      data?: Record<string, string>;
    }[];
    const conf = objects.find((o) => o.kind === "ConfigMap")!.data!["nats.conf"]!;
    await mkdir(join(dir, "etc", "secret"), { recursive: true });
    await writeFile(join(dir, "etc", "secret", "auth.conf"), secret.stringData["auth.conf"]!);
    await writeFile(
      join(dir, "etc", "nats.conf"),
      conf.replace("/data/jetstream", join(dir, "js")).replace("/var/run/nats/nats.pid", join(dir, "nats.pid")),
    );
    const out = await run(join(toolsBin(), "nats-server"), ["-t", "-c", join(dir, "etc", "nats.conf")], {
      env: { ...process.env, POD_NAME: "nats-0" },
    });
    expect(out.stdout + out.stderr).toContain("is valid");
  });
});
