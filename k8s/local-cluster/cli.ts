import { existsSync } from "node:fs";
import { rm } from "node:fs/promises";
import { join } from "node:path";
import { REPO_ROOT, readClusterInfo, startCluster, stopCluster, daemonRunning, MAIN_NODE } from "./cluster.ts";

// `make k8s-up` / `make k8s-down` / `make k8s-status`: the developer's local cluster, kept under
// .run/k8s (or DROVER_K8S_RUN_DIR). Tests do not use it; they start their own (test/k8s/support).
const runDir = process.env.DROVER_K8S_RUN_DIR ?? join(REPO_ROOT, ".run/k8s");
const say = (s: string): void => {
  process.stderr.write(`[drover] ${s}\n`);
};

async function main(cmd: string | undefined): Promise<void> {
  switch (cmd) {
    case "up": {
      const existing = await readClusterInfo(runDir);
      if (existing && (await daemonRunning(runDir, "kube-apiserver"))) {
        say(`local cluster already running at ${existing.server}`);
      } else {
        // A cluster is ephemeral: a new one starts from an empty etcd, never from a half-dead one.
        await stopCluster(runDir);
        await rm(runDir, { recursive: true, force: true });
        const t0 = Date.now();
        // The node imports the runtime image `make image` built, when there is one.
        const runtimeImage = join(REPO_ROOT, ".run/images/runtime.tar");
        const images = existsSync(runtimeImage) ? [runtimeImage] : [];
        const info = await startCluster(runDir, { images });
        say(
          `local cluster up in ${((Date.now() - t0) / 1000).toFixed(1)}s: API server ${info.server}, node ${MAIN_NODE} (upstream kubelet, containerd, runc${images.length ? "; runtime image imported" : "; no runtime image: run make image"}), gateway addresses ${info.gatewayCidr}`,
        );
      }
      say(
        `kubeconfig: ${join(runDir, "kubeconfig")}  (export KUBECONFIG=${join(runDir, "kubeconfig")}; kubectl get nodes)`,
      );
      process.stdout.write(`${join(runDir, "kubeconfig")}\n`);
      return;
    }
    case "down": {
      await stopCluster(runDir);
      say(`local cluster stopped (its kubeconfig ${join(runDir, "kubeconfig")} is no longer valid)`);
      return;
    }
    case "status": {
      const info = await readClusterInfo(runDir);
      const up = info !== undefined && (await daemonRunning(runDir, "kube-apiserver"));
      say(up ? `running: ${info.server}; kubeconfig ${info.kubeconfig}` : "not running");
      return;
    }
    default:
      say("usage: cli.ts up|down|status");
      process.exitCode = 2;
  }
}
await main(process.argv[2]);
