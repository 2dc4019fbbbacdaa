import { execFile } from "node:child_process";
import { writeFile } from "node:fs/promises";
import { promisify } from "node:util";

const run = promisify(execFile);

/** A real node's Pod network: one Linux bridge holding the node's address, Pods attached by CNI. */
export interface NodeNetwork {
  /** Bridge name (≤ 15 characters), unique per cluster slot and node index. */
  readonly bridge: string;
  /** CNI network name (also the prefix of the CNI cache entries under /var/lib/cni). */
  readonly cniName: string;
  /** The Pod subnet, a /24 (e.g. 10.200.4.0/24). */
  readonly podCidr: string;
  /** The node's InternalIP, the .254 of the subnet, on the bridge. */
  readonly nodeIp: string;
}

export function nodeNetwork(slot: number, nodeIndex: number): NodeNetwork {
  const third = slot * 4 + nodeIndex;
  return {
    bridge: `drv${slot}n${nodeIndex}`,
    cniName: `drover-${slot}-${nodeIndex}`,
    podCidr: `10.200.${third}.0/24`,
    nodeIp: `10.200.${third}.254`,
  };
}

const ip = async (...args: string[]): Promise<string> => (await run("ip", args)).stdout;

/**
 * Creates the bridge with the node address (the host reaches every Pod IP through it; a Pod reaches
 * the host only at that address). Refuses a subnet any existing route already covers. No forwarding,
 * no masquerade, no default route for Pods: nothing a Pod sends leaves the bridge.
 */
export async function createBridge(net: NodeNetwork): Promise<void> {
  const routes = await ip("-4", "route", "show", "match", net.nodeIp);
  const clash = routes.split("\n").find((r) => r.trim() !== "" && !r.startsWith("default"));
  if (clash) throw new Error(`Pod subnet ${net.podCidr} collides with the route '${clash.trim()}'`);
  await ip("link", "add", net.bridge, "type", "bridge");
  await ip("addr", "add", `${net.nodeIp}/24`, "dev", net.bridge);
  await ip("link", "set", net.bridge, "up");
}

/** Deletes the bridge if it exists (its veths go with their network namespaces). */
export async function deleteBridge(net: NodeNetwork): Promise<void> {
  await ip("link", "del", net.bridge).catch(() => undefined);
}

/** Writes the CNI config containerd loads: bridge (not a gateway, no masquerade) + host-local IPAM + loopback. */
export async function writeCniConfig(file: string, net: NodeNetwork, ipamDir: string): Promise<void> {
  const base = net.podCidr.replace(/\.0\/24$/, "");
  const conf = {
    cniVersion: "0.4.0",
    name: net.cniName,
    plugins: [
      {
        type: "bridge",
        bridge: net.bridge,
        isGateway: false,
        isDefaultGateway: false,
        ipMasq: false,
        hairpinMode: true,
        ipam: {
          type: "host-local",
          dataDir: ipamDir,
          ranges: [[{ subnet: net.podCidr, rangeStart: `${base}.1`, rangeEnd: `${base}.253` }]],
        },
      },
      { type: "loopback" },
    ],
  };
  await writeFile(file, JSON.stringify(conf, null, 2));
}
