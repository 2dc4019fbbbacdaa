import { connect, createServer, type Server, type Socket } from "node:net";
import type { V1Node, V1Pod, V1Service } from "@kubernetes/client-node";
import type { Logger } from "../lib/log.ts";
import { readyEndpoints } from "./endpoints.ts";

/** One node-port listener: `<node InternalIP>:<nodePort>` forwarding to a Service port. */
export interface NodePortTarget {
  readonly address: string;
  readonly nodePort: number;
  readonly namespace: string;
  readonly service: string;
  /** The Service port (`spec.ports[].port`) whose targetPort the connections go to. */
  readonly port: number;
}

/**
 * What kube-proxy would open for NodePort Services (this cluster runs none): for every Service of
 * `type: NodePort` (LoadBalancer Services, which also get node ports, are not served here) and every
 * TCP port with an allocated `nodePort`, one listener per Node InternalIP. Keyed `address:nodePort`;
 * a Service that is being deleted opens nothing.
 */
export function nodePortPlan(services: readonly V1Service[], nodes: readonly V1Node[]): Map<string, NodePortTarget> {
  const addresses = [
    ...new Set(
      nodes.flatMap((n) => (n.status?.addresses ?? []).filter((a) => a.type === "InternalIP").map((a) => a.address)),
    ),
  ];
  const out = new Map<string, NodePortTarget>();
  for (const svc of services) {
    if (svc.spec?.type !== "NodePort" || svc.metadata?.deletionTimestamp) continue;
    for (const p of svc.spec.ports ?? []) {
      if (!p.nodePort || (p.protocol ?? "TCP") !== "TCP") continue;
      for (const address of addresses) {
        out.set(`${address}:${p.nodePort}`, {
          address,
          nodePort: p.nodePort,
          namespace: svc.metadata?.namespace ?? "",
          service: svc.metadata?.name ?? "",
          port: p.port,
        });
      }
    }
  }
  return out;
}

interface Listener {
  target: NodePortTarget;
  readonly server: Server;
  readonly sockets: Set<Socket>;
}

/**
 * A userspace node-port proxy (the local cluster's stand-in for kube-proxy): {@link sync} opens and
 * closes listeners to match {@link nodePortPlan}; each accepted connection is forwarded as plain TCP
 * to a Ready Pod selected by the Service (round robin, resolved per connection from the informers'
 * caches). No Ready Pod → the connection is closed at once. Closing a listener (Service deleted)
 * also destroys its open connections, so nothing outlives the Service.
 */
export class NodePortProxy {
  private readonly listeners = new Map<string, Listener>();
  private readonly failed = new Map<string, string>();
  private rr = 0;

  constructor(
    private readonly log: Logger,
    private readonly services: () => readonly V1Service[],
    private readonly pods: () => readonly V1Pod[],
  ) {}

  async sync(plan: Map<string, NodePortTarget>): Promise<void> {
    for (const [key, l] of this.listeners)
      if (!plan.has(key)) {
        this.listeners.delete(key);
        await close(l);
        this.log.info("node port closed", { address: key });
      }
    for (const key of this.failed.keys()) if (!plan.has(key)) this.failed.delete(key);
    for (const [key, target] of plan) {
      const l = this.listeners.get(key);
      if (l) {
        l.target = target;
        continue;
      }
      if (this.failed.has(key)) continue; // logged once; retried when the Service or Node changes the plan
      try {
        this.listeners.set(key, await this.open(target));
        this.log.info("node port listening", { address: key, service: `${target.namespace}/${target.service}` });
      } catch (err) {
        this.failed.set(key, (err as Error).message);
        this.log.warn("cannot listen on node port", { address: key, err });
      }
    }
  }

  async close(): Promise<void> {
    const all = [...this.listeners.values()];
    this.listeners.clear();
    await Promise.allSettled(all.map(close));
  }

  private open(target: NodePortTarget): Promise<Listener> {
    const sockets = new Set<Socket>();
    const listener: Listener = { target, sockets, server: createServer((down) => this.forward(listener, down)) };
    return new Promise((ok, fail) => {
      listener.server.once("error", fail);
      listener.server.listen(target.nodePort, target.address, () => {
        listener.server.off("error", fail);
        ok(listener);
      });
    });
  }

  private forward(l: Listener, down: Socket): void {
    const t = l.target;
    const svc = this.services().find((s) => s.metadata?.namespace === t.namespace && s.metadata?.name === t.service);
    const eps = svc ? readyEndpoints(svc, t.port, this.pods()) : [];
    const ep = eps[this.rr++ % Math.max(1, eps.length)];
    if (!ep) {
      down.destroy();
      return;
    }
    const up = connect(ep.port, ep.ip);
    for (const s of [down, up]) {
      l.sockets.add(s);
      s.once("close", () => l.sockets.delete(s));
    }
    down.on("error", () => up.destroy());
    up.on("error", () => down.destroy());
    down.pipe(up).pipe(down);
  }
}

async function close(l: Listener): Promise<void> {
  for (const s of l.sockets) s.destroy();
  await new Promise<void>((ok) => l.server.close(() => ok()));
}
