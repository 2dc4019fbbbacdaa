import { randomBytes } from "node:crypto";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { generateKeys, type NatsKeys } from "./nats-auth/credentials.ts";
import { forgetServerKeys, rememberServerKeys } from "./nats-auth/server-keys.ts";
import { serverConfig } from "./nats-auth/server-config.ts";
import { scopeOf, TAGGED_SCOPE } from "./nats-auth/rights.ts";
import { freePort, launch, toolsBin, type RunningServer } from "./local-servers.ts";
import { DEFAULT_LAYOUT } from "../streams/index.ts";

/** One node of a private cluster: its server_name, client port and monitoring port. */
export interface ClusterNode {
  readonly name: string;
  readonly port: number;
  readonly httpPort: number;
  /** The node's current process id (changes at each restart); -1 while killed. */
  pid(): number;
}

/**
 * A private N-node nats-server JetStream cluster on loopback: the same accounts, identities and
 * auth callout as `startNats` (one `authConfig`), each node its own store dir and server_name,
 * routes authenticated by their own user. `url` is the comma-separated seed list every client
 * connects to (nats-connect.ts splits it); the keys are remembered under it (server-keys.ts).
 */
export interface NatsCluster extends RunningServer {
  readonly keys: NatsKeys;
  readonly nodes: readonly ClusterNode[];
  /** SIGKILLs a node (a crash: no shutdown, no leadership hand-over). */
  kill(name: string): Promise<void>;
  /** Starts a killed node again on its own store dir and ports, and waits until it is healthy. */
  restart(name: string): Promise<void>;
}

interface NodeState {
  readonly node: ClusterNode;
  readonly conf: string;
  server?: RunningServer;
}

/** Waits until a node's monitoring endpoint says JetStream is healthy and sees a meta leader of `size` peers. */
async function waitHealthy(httpPort: number, size: number, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = "";
  while (Date.now() < deadline) {
    try {
      const health = await fetch(`http://127.0.0.1:${httpPort}/healthz`);
      const jsz = (await (await fetch(`http://127.0.0.1:${httpPort}/jsz`)).json()) as {
        meta_cluster?: { leader?: string; cluster_size?: number };
      };
      last = `healthz ${health.status}, meta ${JSON.stringify(jsz.meta_cluster)}`;
      if (health.ok && jsz.meta_cluster?.leader && jsz.meta_cluster.cluster_size === size) return;
    } catch (e) {
      last = (e as Error).message;
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`nats node on monitor port ${httpPort} not healthy within ${timeoutMs} ms: ${last}`);
}

interface MetaCluster {
  leader?: string;
  cluster_size?: number;
  replicas?: { name: string; current?: boolean; offline?: boolean }[];
}

/**
 * Waits until the meta leader reports every other node as a current, online peer: healthz alone
 * passes while a peer still counts as offline, and an R3 stream created then is refused ("no
 * suitable peers for placement, peer offline": seen in the proof tier right after start-up). Not
 * enough on its own: placement also needs the peer's first statsz at the leader, which monitoring
 * does not show (CI saw the refusal once more after this wait), so `setupNats` retries that refusal.
 */
async function waitAllCurrent(nodes: readonly ClusterNode[], timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = "";
  while (Date.now() < deadline) {
    for (const n of nodes) {
      const meta = await fetch(`http://127.0.0.1:${n.httpPort}/jsz`)
        .then(async (r) => ((await r.json()) as { meta_cluster?: MetaCluster }).meta_cluster)
        .catch(() => undefined);
      if (!meta || meta.leader !== n.name) continue;
      last = JSON.stringify(meta.replicas);
      const peers = meta.replicas ?? [];
      if (peers.length === nodes.length - 1 && peers.every((p) => p.current && !p.offline)) return;
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`the meta leader did not report every peer current within ${timeoutMs} ms: ${last}`);
}

export async function startNatsCluster(o: { size?: number; keys?: NatsKeys } = {}): Promise<NatsCluster> {
  const size = o.size ?? 3;
  const dir = await mkdtemp(join(tmpdir(), "drover-nats-cluster-"));
  const keys = o.keys ?? generateKeys({ harness: true, producers: ["acme", "globex"] });
  const ports = await Promise.all(Array.from({ length: size }, async () => [await freePort(), await freePort()]));
  const routePorts = await Promise.all(ports.map(() => freePort()));
  const routeUser = "route";
  const routePassword = randomBytes(18).toString("base64url");
  const clusterName = `drover-${ports[0]![0]}`;
  const states: NodeState[] = [];
  for (let i = 0; i < size; i++) {
    const [port, httpPort] = ports[i]!;
    const name = `n${i + 1}-${port}`;
    const storeDir = join(dir, `n${i + 1}`);
    await mkdir(storeDir, { recursive: true });
    const conf = join(dir, `n${i + 1}.conf`);
    const config = serverConfig({
      host: "127.0.0.1",
      port: port!,
      httpPort: httpPort!,
      storeDir,
      keys,
      scopes: [scopeOf(DEFAULT_LAYOUT), TAGGED_SCOPE],
      cluster: { serverName: name, clusterName, routePort: routePorts[i]!, routePorts, routeUser, routePassword },
    });
    await writeFile(conf, config, { mode: 0o600 });
    const state: NodeState = {
      conf,
      node: { name, port: port!, httpPort: httpPort!, pid: () => state.server?.pid ?? -1 },
    };
    states.push(state);
  }
  const url = states.map((s) => `nats://127.0.0.1:${s.node.port}`).join(",");
  const launchNode = async (s: NodeState) => {
    s.server = await launch(
      s.node.name,
      join(toolsBin(), "nats-server"),
      ["-c", s.conf],
      s.node.port,
      url,
      dir,
      "127.0.0.1",
      false,
    );
  };
  const byName = (name: string): NodeState => {
    const s = states.find((x) => x.node.name === name);
    if (!s) throw new Error(`no cluster node named ${name}`);
    return s;
  };
  const stopAll = async () => {
    await Promise.all(states.map((s) => s.server?.stop()));
    await rm(dir, { recursive: true, force: true });
    await forgetServerKeys(url);
  };
  try {
    await Promise.all(states.map(launchNode));
    await Promise.all(states.map((s) => waitHealthy(s.node.httpPort, size)));
    await waitAllCurrent(states.map((s) => s.node));
  } catch (e) {
    await stopAll();
    throw e;
  }
  await rememberServerKeys(url, keys);
  return {
    name: "nats-cluster",
    port: states[0]!.node.port,
    url,
    pid: states[0]!.node.pid(),
    keys,
    nodes: states.map((s) => s.node),
    async kill(name) {
      const s = byName(name);
      if (!s.server) return;
      process.kill(s.server.pid, "SIGKILL");
      await s.server.stop();
      s.server = undefined;
    },
    async restart(name) {
      const s = byName(name);
      if (s.server) throw new Error(`cluster node ${name} is running`);
      await launchNode(s);
      await waitHealthy(s.node.httpPort, size);
      await waitAllCurrent(states.map((x) => x.node));
    },
    stop: stopAll,
  };
}

/** `NATS_CLUSTER`: nodes of the private NATS the harness/proof starts (unset or 1: one server; 3: a cluster). */
export function natsClusterSize(env: Readonly<Record<string, string | undefined>> = process.env): number {
  const raw = env.NATS_CLUSTER;
  if (raw === undefined || raw === "" || raw === "1") return 1;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 3 || n % 2 === 0)
    throw new RangeError(`NATS_CLUSTER must be 1 or an odd number ≥ 3 (a quorum), got ${raw}`);
  return n;
}
