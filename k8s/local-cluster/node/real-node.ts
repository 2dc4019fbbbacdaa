import { execFile } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { mkdir, readFile, readlink, rename, rm, rmdir, writeFile } from "node:fs/promises";
import { basename, join, resolve } from "node:path";
import { promisify } from "node:util";
import { stopDaemon } from "../lib/daemon.ts";
import { issueCert, writeCertKubeconfig } from "./certs.ts";
import { cgroupProcesses, createCgroupRoot, removeCgroupRoot } from "./cgroups.ts";
import {
  containerIds,
  containerdPaths,
  importImage,
  killShims,
  removeAllTasks,
  shimPids,
  startContainerd,
  stopContainerd,
} from "./containerd.ts";
import { createBridge, deleteBridge, nodeNetwork, writeCniConfig, type NodeNetwork } from "./host-net.ts";
import { startRealKubelet } from "./kubelet.ts";

const run = promisify(execFile);
const REPO_ROOT = resolve(import.meta.dirname, "../../..");
const IMAGE_SCRIPT = join(REPO_ROOT, "k8s/image/build.sh");

/** What is recorded about a real node (`<runDir>/node-<name>/node.json`) so any process can tear it down. */
export interface RealNodeRecord {
  readonly nodeName: string;
  readonly nodeIndex: number;
  readonly slot: number;
  readonly net: NodeNetwork;
  readonly cgroupRoot: string;
}

export const realNodeDir = (runDir: string, nodeName: string): string => join(runDir, `node-${nodeName}`);

/**
 * Starts one real node: its bridge and CNI config, its cgroup root, containerd (own root, state,
 * socket), the locally built pause image (and `images`) imported, and the upstream kubelet as
 * `system:node:<name>` (client certificate, group system:nodes). Resolves once the kubelet's healthz
 * answers; the Node turns Ready and untainted shortly after (the controller manager lifts the taint).
 * On failure the caller tears the node down with {@link stopRealNode}.
 */
export async function startRealNode(opts: {
  runDir: string;
  binDir: string;
  server: string;
  caFile: string;
  slot: number;
  nodeName: string;
  nodeIndex: number;
  images?: readonly string[];
}): Promise<RealNodeRecord> {
  const dir = realNodeDir(opts.runDir, opts.nodeName);
  await mkdir(join(dir, "cni", "net.d"), { recursive: true });
  const net = nodeNetwork(opts.slot, opts.nodeIndex);
  const rec: RealNodeRecord = {
    nodeName: opts.nodeName,
    nodeIndex: opts.nodeIndex,
    slot: opts.slot,
    net,
    cgroupRoot: `drover-${opts.slot}-${opts.nodeIndex}`,
  };
  await writeFile(join(dir, "node.json"), JSON.stringify(rec, null, 2));
  // A bridge or cgroup of this slot left by a cluster that died without its teardown: the slot is ours now.
  await deleteBridge(net);
  removeCgroupRoot(rec.cgroupRoot);
  await createBridge(net);
  createCgroupRoot(rec.cgroupRoot);
  const pause = (await run(IMAGE_SCRIPT, ["pause"])).stdout.trim();
  const client = await issueCert(opts.runDir, dir, "kubelet-client", {
    cn: `system:node:${opts.nodeName}`,
    org: "system:nodes",
  });
  const serving = await issueCert(opts.runDir, dir, "kubelet-serving", { cn: opts.nodeName }, [net.nodeIp]);
  const kubeconfig = join(dir, "kubelet.kubeconfig");
  await writeCertKubeconfig(kubeconfig, opts.server, opts.caFile, client);
  const paths = containerdPaths(dir);
  await writeCniConfig(join(paths.cniConfDir, "10-drover.conflist"), net, join(dir, "cni", "ipam"));
  await startContainerd(paths);
  const archives = [join(REPO_ROOT, ".run/images/pause.tar"), ...(opts.images ?? [])];
  await Promise.all(archives.map((a) => importImage(paths, a)));
  if (!pause) throw new Error("k8s/image/build.sh pause printed no image reference");
  await startRealKubelet({
    bin: join(opts.binDir, "kubelet"),
    nodeDir: dir,
    nodeName: opts.nodeName,
    nodeIp: net.nodeIp,
    kubeconfig,
    caFile: opts.caFile,
    serving,
    containerdSocket: paths.socket,
    cgroupRoot: `/${rec.cgroupRoot}`,
  });
  return rec;
}

/** Every mount point at or under `dir`, deepest first. */
function mountsUnder(dir: string): string[] {
  const unescape = (s: string): string =>
    s.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8)));
  return readFileSync("/proc/self/mountinfo", "utf8")
    .split("\n")
    .map((l) => unescape(l.split(" ")[4] ?? ""))
    .filter((m) => m === dir || m.startsWith(`${dir}/`))
    .sort((a, b) => b.length - a.length);
}

async function settle(check: () => boolean, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (!check() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  return check();
}

/**
 * Removes everything a real node created, in order: the kubelet, every container (through
 * containerd, so shims exit and remove their sockets), containerd, any shim or container process
 * still alive (SIGKILL), every mount under the node dir (the kubelet's rshared root, overlay
 * rootfs, network namespaces), the bridge, the cgroup root, the node's CNI cache entries in
 * /var/lib/cni, and the node dir. Safe to call twice and on a half-started node.
 */
export async function stopRealNode(runDir: string, nodeName: string): Promise<void> {
  const dir = realNodeDir(runDir, nodeName);
  let rec: RealNodeRecord;
  try {
    rec = JSON.parse(await readFile(join(dir, "node.json"), "utf8")) as RealNodeRecord;
  } catch {
    await rm(dir, { recursive: true, force: true });
    return;
  }
  const paths = containerdPaths(dir);
  await stopDaemon(join(dir, "kubelet.json"));
  const ids = await containerIds(paths);
  await removeAllTasks(paths);
  await stopContainerd(dir);
  killShims(paths);
  await settle(() => shimPids(paths).length === 0, 5_000);
  for (const pid of cgroupProcesses(rec.cgroupRoot)) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      /* gone */
    }
  }
  await settle(() => cgroupProcesses(rec.cgroupRoot).length === 0, 5_000);
  for (const m of mountsUnder(dir))
    await run("umount", [m]).catch(() => run("umount", ["-l", m]).catch(() => undefined));
  await deleteBridge(rec.net);
  removeCgroupRoot(rec.cgroupRoot);
  // CNI's cache (`<network>-<container id>-<if>`, for this node's bridge network and containerd's
  // loopback) and the kubelet's /var/log/containers links into this node's pod logs.
  const cache = "/var/lib/cni/results";
  if (existsSync(cache))
    for (const f of readdirSync(cache).filter(
      (f) => f.startsWith(`${rec.net.cniName}-`) || ids.some((id) => f.includes(`-${id}-`)),
    ))
      await rm(join(cache, f), { force: true });
  const links = "/var/log/containers";
  if (existsSync(links))
    for (const f of readdirSync(links)) {
      const target = await readlink(join(links, f)).catch(() => "");
      if (target.startsWith(`${dir}/`)) await rm(join(links, f), { force: true });
    }
  await removeSharedHostDirs();
  // The logs (daemons' and containers') outlive the node (in the cluster dir, removed with it).
  for (const log of ["kubelet.log", "containerd.log", "pod-logs"])
    await rename(join(dir, log), join(runDir, `node-${nodeName}.${log}`)).catch(() => undefined);
  await rm(dir, { recursive: true, force: true });
}

/**
 * Paths the kubelet, containerd's shims and CNI create at fixed host locations whatever their
 * configuration. Removed when empty (rmdir never takes another node's entries); the kubelet's
 * device-plugin socket only once no kubelet runs on the machine.
 */
export const SHARED_HOST_DIRS = [
  "/var/lib/kubelet/device-plugins",
  "/var/lib/kubelet",
  "/var/log/containers",
  "/var/lib/cni/results",
  "/var/lib/cni",
  "/run/containerd/s",
  "/run/containerd/fifo",
  "/run/containerd/runc",
  "/run/containerd",
];

/** True while any kubelet process runs on this machine (another cluster's node). */
export function anyKubeletRunning(): boolean {
  return readdirSync("/proc").some((e) => {
    if (!/^\d+$/.test(e)) return false;
    try {
      return basename(readFileSync(`/proc/${e}/cmdline`, "utf8").split("\0")[0] ?? "") === "kubelet";
    } catch {
      return false;
    }
  });
}

async function removeSharedHostDirs(): Promise<void> {
  if (!anyKubeletRunning()) await rm("/var/lib/kubelet/device-plugins/kubelet.sock", { force: true });
  for (const d of SHARED_HOST_DIRS) await rmdir(d).catch(() => undefined);
}

/** The names of the real nodes recorded under `runDir`. */
export function realNodesIn(runDir: string): string[] {
  try {
    return readdirSync(runDir)
      .filter((e) => e.startsWith("node-") && existsSync(join(runDir, e, "node.json")))
      .map((e) => e.slice("node-".length));
  } catch {
    return [];
  }
}
