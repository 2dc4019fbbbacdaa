import { writeFile } from "node:fs/promises";
import { parseArgs } from "node:util";
import {
  CoreV1Api,
  CustomObjectsApi,
  type KubernetesListObject,
  type KubernetesObject,
  type V1Namespace,
  type V1Node,
  type V1Pod,
  type V1Service,
} from "@kubernetes/client-node";
import { loadKubeconfig } from "../control-plane/kubeconfig.ts";
import { GATEWAY_CONTROLLER } from "../control-plane/gateway-crds.ts";
import { startInformer, type Informer } from "../lib/informer.ts";
import { IpPool } from "../lib/ip-pool.ts";
import { makeLogger } from "../lib/log.ts";
import { GROUP, type Gateway, type GatewayClass, type GrpcRoute, type HttpRoute } from "./api-types.ts";
import { rfc3339 } from "./conditions.ts";
import { ListenerServer, type Decision } from "./data-plane.ts";
import { readyEndpoints } from "./endpoints.ts";
import { NodePortProxy, nodePortPlan } from "./node-ports.ts";
import { ourGateways, plan, type RouteEntry } from "./plan.ts";
import { selectRoute, type RequestFacts } from "./route-match.ts";
import { StatusWriter } from "./status-writer.ts";

// The local gateway of drover's local cluster (test and developer infrastructure, not a Gateway
// API conformance implementation): serves Gateways of classes whose controllerName is ours, each on
// its own loopback address from --address-cidr, writes Gateway/route status, and proxies by route.
// It is also the cluster's node-port proxy (there is no kube-proxy): NodePort Services are served
// on every Node's InternalIP at their nodePort, forwarding TCP to the Ready Pods they select.
//   node --import tsx k8s/local-cluster/gateway/main.ts --kubeconfig F --address-cidr 127.0.X.0/24 [--ready-file F]
const { values: args } = parseArgs({
  options: {
    kubeconfig: { type: "string" },
    "address-cidr": { type: "string" },
    "ready-file": { type: "string" },
    "controller-name": { type: "string", default: GATEWAY_CONTROLLER },
  },
});
if (!args.kubeconfig || !args["address-cidr"]) {
  process.stderr.write("gateway: --kubeconfig and --address-cidr are required\n");
  process.exit(2);
}
const controllerName = args["controller-name"] ?? GATEWAY_CONTROLLER;
const log = makeLogger("gateway");
const kc = loadKubeconfig(args.kubeconfig);
const core = kc.makeApiClient(CoreV1Api);
const custom = kc.makeApiClient(CustomObjectsApi);
const addressPool = new IpPool(args["address-cidr"]);
const addresses = new Map<string, string>();
const bound = new Map<string, true | string>();
const servers = new Map<string, ListenerServer>();
const binding = new Set<string>();
const tables = new Map<string, readonly RouteEntry[]>();
const statuses = new StatusWriter(custom);
const roundRobin = new Map<string, number>();

let dirty = false;
let running = false;
let started = false; // informers fire while they start; reconcile only once all have listed
const kick = (): void => {
  dirty = true;
  if (started && !running) void loop();
};

const crd = <T extends KubernetesObject>(plural: string, cluster = false): Promise<Informer<T>> =>
  startInformer<T>(kc, {
    path: `/apis/${GROUP}/v1/${plural}`,
    list: () =>
      (cluster
        ? custom.listClusterCustomObject({ group: GROUP, version: "v1", plural })
        : custom.listCustomObjectForAllNamespaces({ group: GROUP, version: "v1", plural })) as Promise<
        KubernetesListObject<T>
      >,
    onChange: kick,
    log,
  });
const [classes, gateways, httpRoutes, grpcRoutes] = [
  await crd<KubernetesObject>("gatewayclasses", true),
  await crd<KubernetesObject>("gateways"),
  await crd<KubernetesObject>("httproutes"),
  await crd<KubernetesObject>("grpcroutes"),
];
const services = await startInformer<V1Service>(kc, {
  path: "/api/v1/services",
  list: () => core.listServiceForAllNamespaces(),
  onChange: kick,
  log,
});
const pods = await startInformer<V1Pod>(kc, {
  path: "/api/v1/pods",
  list: () => core.listPodForAllNamespaces(),
  onChange: () => undefined,
  log,
});
const namespaces = await startInformer<V1Namespace>(kc, {
  path: "/api/v1/namespaces",
  list: () => core.listNamespace(),
  onChange: kick,
  log,
});
const nodes = await startInformer<V1Node>(kc, {
  path: "/api/v1/nodes",
  list: () => core.listNode(),
  onChange: kick,
  log,
});
const nodePorts = new NodePortProxy(
  makeLogger("node-port-proxy"),
  () => services.list(),
  () => pods.list(),
);

function decide(key: string, facts: RequestFacts): Decision {
  const entry = selectRoute(tables.get(key) ?? [], facts);
  if (!entry) return { status: 404, message: "no route matches this request" };
  if (!entry.refsOk || entry.backends.length === 0)
    return { status: 500, message: `route ${entry.route} has unresolved backend references` };
  const total = entry.backends.reduce((n, b) => n + b.weight, 0);
  let r = Math.random() * total;
  const backend = entry.backends.find((b) => (r -= b.weight) < 0) ?? entry.backends[0];
  if (!backend || total === 0) return { status: 500, message: `route ${entry.route} has no backend with weight` };
  const svc = services
    .list()
    .find((s) => s.metadata?.namespace === backend.namespace && s.metadata?.name === backend.service);
  if (!svc) return { status: 500, message: `Service ${backend.namespace}/${backend.service} not found` };
  const eps = readyEndpoints(svc, backend.port, pods.list());
  if (eps.length === 0)
    return { status: 503, message: `no ready endpoints for Service ${backend.namespace}/${backend.service}` };
  const rrKey = `${backend.namespace}/${backend.service}`;
  const n = roundRobin.get(rrKey) ?? 0;
  roundRobin.set(rrKey, n + 1);
  return { to: eps[n % eps.length] as (typeof eps)[number] };
}

async function reconcile(): Promise<void> {
  await nodePorts.sync(nodePortPlan(services.list(), nodes.list()));
  const snapshot = {
    controllerName,
    classes: classes.list() as unknown as GatewayClass[],
    gateways: gateways.list() as unknown as Gateway[],
    httpRoutes: httpRoutes.list() as unknown as HttpRoute[],
    grpcRoutes: grpcRoutes.list() as unknown as GrpcRoute[],
    services: services.list(),
    namespaces: namespaces.list(),
    addresses,
    bound,
    now: rfc3339(new Date()),
  };
  // Addresses: keep the one a Gateway already reports (stable across gateway restarts), else allocate.
  const live = new Set<string>();
  for (const gw of ourGateways(snapshot)) {
    const key = `${gw.metadata.namespace}/${gw.metadata.name}`;
    live.add(key);
    if (addresses.has(key)) continue;
    const had = gw.status?.addresses?.[0]?.value;
    const ip =
      had && addressPool.contains(had) && ![...addresses.values()].includes(had)
        ? (addressPool.reserve(had), had)
        : addressPool.allocate();
    addresses.set(key, ip);
  }
  for (const [key, ip] of addresses)
    if (!live.has(key)) {
      addresses.delete(key);
      addressPool.release(ip);
    }

  const p = plan(snapshot);
  for (const [key, b] of p.bindings) {
    tables.set(key, b.entries);
    if (servers.has(key) || bound.has(key) || binding.has(key)) continue;
    binding.add(key);
    ListenerServer.bind(b.ip, b.port, (facts) => decide(key, facts)).then(
      (srv) => {
        binding.delete(key);
        servers.set(key, srv);
        bound.set(key, true);
        log.info("listening", { address: key });
        kick();
      },
      (err: Error) => {
        binding.delete(key);
        bound.set(key, err.message);
        log.warn("cannot listen", { address: key, err });
        kick();
      },
    );
  }
  for (const key of bound.keys()) if (!p.bindings.has(key) && !servers.has(key)) bound.delete(key); // forget failed binds
  for (const [key, srv] of servers) {
    if (!p.bindings.has(key)) {
      servers.delete(key);
      bound.delete(key);
      tables.delete(key);
      await srv.close();
      log.info("stopped listening", { address: key });
    }
  }
  const writes: Promise<void>[] = [];
  for (const [name, st] of p.classStatus)
    writes.push(
      statuses.write(
        { plural: "gatewayclasses", name },
        classes.list().find((c) => c.metadata?.name === name)?.["status" as never],
        st,
      ),
    );
  for (const [key, st] of p.gatewayStatus) {
    const [namespace = "", name = ""] = key.split("/");
    const cur = (gateways.list() as unknown as Gateway[]).find(
      (g) => g.metadata.namespace === namespace && g.metadata.name === name,
    )?.status;
    writes.push(statuses.write({ plural: "gateways", namespace, name }, cur, st));
  }
  for (const [key, parents] of p.routeParents) {
    const [kind, namespace = "", name = ""] = key.split("/");
    const list = (kind === "HTTPRoute" ? httpRoutes : grpcRoutes).list() as unknown as HttpRoute[];
    const cur = list.find((r) => r.metadata.namespace === namespace && r.metadata.name === name)?.status;
    writes.push(
      statuses.write({ plural: kind === "HTTPRoute" ? "httproutes" : "grpcroutes", namespace, name }, cur, { parents }),
    );
  }
  const failed = (await Promise.allSettled(writes)).filter((r) => r.status === "rejected");
  if (failed.length > 0) {
    log.warn("status writes failed; retrying", {
      count: failed.length,
      err: (failed[0] as PromiseRejectedResult).reason,
    });
    setTimeout(kick, 500);
  }
}

async function loop(): Promise<void> {
  running = true;
  while (dirty) {
    dirty = false;
    try {
      await reconcile();
    } catch (err) {
      log.error("reconcile failed; retrying", { err });
      setTimeout(kick, 1000);
    }
  }
  running = false;
}

started = true;
dirty = true;
await loop();
log.info("gateway ready", { addressCidr: args["address-cidr"] });
if (args["ready-file"]) await writeFile(args["ready-file"], String(process.pid));

const shutdown = async (): Promise<void> => {
  await Promise.allSettled(
    [classes, gateways, httpRoutes, grpcRoutes, services, pods, namespaces, nodes].map((i) => i.stop()),
  );
  await Promise.allSettled([...[...servers.values()].map((s) => s.close()), nodePorts.close()]);
  process.exit(0);
};
process.on("SIGTERM", () => void shutdown());
process.on("SIGINT", () => void shutdown());
