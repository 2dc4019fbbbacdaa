import { execFile } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import { startDaemon, stopDaemon, waitUntilReady, type DaemonRecord } from "../lib/daemon.ts";

const run = promisify(execFile);

/** Where one node's containerd keeps everything (all under the node dir, nothing shared with another). */
export interface ContainerdPaths {
  readonly dir: string;
  readonly socket: string;
  readonly config: string;
  readonly cniConfDir: string;
  readonly runcRoot: string;
}

export function containerdPaths(nodeDir: string): ContainerdPaths {
  const dir = join(nodeDir, "containerd");
  return {
    dir,
    socket: join(dir, "containerd.sock"),
    config: join(dir, "config.toml"),
    cniConfDir: join(nodeDir, "cni", "net.d"),
    runcRoot: join(dir, "runc"),
  };
}

/** The locally built sandbox image (k8s/image/build.sh pause) carries this name. */
export const PAUSE_IMAGE = "registry.k8s.io/pause:3.10";

// restrict_oom_score_adj: the machine's bounding set lacks CAP_SYS_RESOURCE, so runc cannot set the
// −998 the CRI asks for on the sandbox ("can't get final child's PID from pipe: EOF"); clamp instead.
function configToml(p: ContainerdPaths): string {
  return `version = 2
root = "${join(p.dir, "root")}"
state = "${join(p.dir, "state")}"
[grpc]
  address = "${p.socket}"
[ttrpc]
  address = "${p.socket}.ttrpc"
[plugins."io.containerd.internal.v1.opt"]
  path = "${join(p.dir, "opt")}"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "${PAUSE_IMAGE}"
  netns_mounts_under_state_dir = true
  restrict_oom_score_adj = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = "${p.runcRoot}"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "${p.cniConfDir}"
`;
}

const ctr = (p: ContainerdPaths, ...args: string[]) =>
  run("ctr", ["--address", p.socket, "--namespace", "k8s.io", ...args], { maxBuffer: 16 << 20 });

/** Starts the node's containerd and resolves once it answers on its socket. */
export async function startContainerd(p: ContainerdPaths): Promise<DaemonRecord> {
  await mkdir(p.dir, { recursive: true });
  await writeFile(p.config, configToml(p));
  const rec = await startDaemon("containerd", "containerd", ["--config", p.config], {
    logFile: join(p.dir, "..", "containerd.log"),
    recordFile: join(p.dir, "..", "containerd.json"),
  });
  await waitUntilReady(
    rec,
    async () =>
      (await ctr(p, "version")
        .then(() => true)
        .catch(() => false)) as boolean,
    30_000,
  );
  return rec;
}

/** Imports an image archive (docker-archive or OCI) into the node's `k8s.io` namespace, keeping its name. */
export async function importImage(p: ContainerdPaths, archive: string): Promise<void> {
  await ctr(p, "images", "import", "--no-unpack=false", archive);
}

/** The references of the images the node holds. */
export async function listImages(p: ContainerdPaths): Promise<string[]> {
  const { stdout } = await ctr(p, "images", "ls", "-q");
  return stdout.split("\n").filter(Boolean);
}

/** The ids of every container (sandboxes included) containerd knows; empty when it does not answer. */
export async function containerIds(p: ContainerdPaths): Promise<string[]> {
  if (!existsSync(p.socket)) return [];
  return ctr(p, "containers", "ls", "-q")
    .then((r) => r.stdout.split("\n").filter(Boolean))
    .catch(() => [] as string[]);
}

/**
 * Kills and deletes every task (containers first, sandboxes last) so each shim exits by itself and
 * removes its socket; best effort, the shims that remain are killed by {@link killShims}.
 */
export async function removeAllTasks(p: ContainerdPaths): Promise<void> {
  if (!existsSync(p.socket)) return;
  const ids = await ctr(p, "tasks", "ls", "-q")
    .then((r) => r.stdout.split("\n").filter(Boolean))
    .catch(() => [] as string[]);
  for (const id of ids) await ctr(p, "tasks", "kill", "--signal", "SIGKILL", id).catch(() => undefined);
  for (let round = 0; round < 3; round++)
    for (const id of ids) await ctr(p, "tasks", "delete", "--force", id).catch(() => undefined);
}

/** Every process whose command line names this containerd's socket: its shims (they outlive containerd). */
export function shimPids(p: ContainerdPaths): number[] {
  const out: number[] = [];
  for (const e of readdirSync("/proc")) {
    if (!/^\d+$/.test(e)) continue;
    try {
      const cmd = readFileSync(`/proc/${e}/cmdline`, "utf8");
      if (cmd.startsWith("/usr/bin/containerd-shim") && cmd.includes(p.socket)) out.push(Number(e));
    } catch {
      /* gone */
    }
  }
  return out;
}

export function killShims(p: ContainerdPaths): void {
  for (const pid of shimPids(p)) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      /* gone */
    }
  }
}

export async function stopContainerd(nodeDir: string): Promise<void> {
  await stopDaemon(join(nodeDir, "containerd.json"));
}
