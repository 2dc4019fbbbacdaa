import { readdirSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { loadAllYaml, type V1Container, type V1NetworkPolicy, type V1Probe } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { buildRuntimePod, RUNTIME_OPS_PORT, RUNTIME_PORT } from "../../platform/hosts/kubernetes/spec.ts";
import { hostSpec } from "../support/host-processes.ts";
import { admits, type PolicyPod } from "../support/network-policy.ts";

/**
 * Who reaches the ops listeners (/healthz, /readyz, /metrics) and the runtime command ports under
 * k8s/drover/'s NetworkPolicies, evaluated by the API's semantics over the shipped manifests and the
 * runtime Pod the provisioner renders (platform/hosts/kubernetes/spec.ts). Proves no transport and
 * no network plugin: the policies' meaning (their schema is checked by the API server in
 * test/k8s/manifests.k8s.test.ts).
 */
const DIR = resolve(import.meta.dirname, "../../k8s/drover");
type Obj = { kind: string; metadata: { name: string; namespace?: string; labels?: Record<string, string> } };
const objects = readdirSync(DIR)
  .filter((f) => f.endsWith(".yaml"))
  .flatMap((f) => loadAllYaml(readFileSync(join(DIR, f), "utf8")) as Obj[]);
const policies = objects.filter((o) => o.kind === "NetworkPolicy") as unknown as V1NetworkPolicy[];
const namespaces: Record<string, Record<string, string>> = {
  ...Object.fromEntries(
    objects.filter((o) => o.kind === "Namespace").map((o) => [o.metadata.name, o.metadata.labels ?? {}]),
  ),
  monitoring: { "drover.dev/ops-scraper": "true" }, // where an operator runs Prometheus, labelled as 50-network-policy.yaml asks
  default: {},
  "drover-deps": {},
};
const deployments = (
  objects.filter((o) => o.kind === "Deployment") as unknown as {
    metadata: { name: string; namespace: string };
    spec: { template: { metadata: { labels: Record<string, string> }; spec: { containers: V1Container[] } } };
  }[]
).map((d) => ({
  name: d.metadata.name,
  pod: {
    namespace: d.metadata.namespace,
    labels: d.spec.template.metadata.labels,
    containers: d.spec.template.spec.containers,
  } satisfies PolicyPod,
}));
const runtimePod = (transport: "http" | "grpc") => {
  const pod = buildRuntimePod(hostSpec({ runtimeInstanceId: `rt-np-${transport}`, transport }), {
    namespace: "drover-runtimes",
    command: ["node"],
    image: "drover/drover:dev",
  });
  return {
    namespace: "drover-runtimes",
    labels: pod.metadata!.labels!,
    containers: pod.spec!.containers,
  } satisfies PolicyPod;
};
const from = (namespace: string, labels: Record<string, string> = {}): PolicyPod => ({ namespace, labels });
const systemPeer = from("drover-system", {
  "app.kubernetes.io/name": "drover-admission",
  "app.kubernetes.io/part-of": "drover",
});
const portOf = (c: V1Container, p: V1Probe | undefined) => {
  const ref = p?.httpGet?.port ?? p?.tcpSocket?.port;
  return typeof ref === "number" ? ref : c.ports?.find((x) => x.name === ref)?.containerPort;
};

describe("k8s/drover NetworkPolicies over the rendered manifests (policy semantics; proves no transport)", () => {
  it("each control-plane service's ops port 9090 is reachable from ops-scraper namespaces only", () => {
    const withOps = deployments.filter((d) => d.pod.containers.some((c) => c.ports?.some((p) => p.name === "ops")));
    expect(withOps.map((d) => d.name).sort()).toEqual(
      [
        "drover-admission",
        "drover-capacity",
        "drover-forensics",
        "drover-provisioner",
        "drover-recovery",
        "drover-scheduler",
      ].sort(),
    );
    for (const d of withOps) {
      expect(d.pod.containers[0]!.ports?.find((p) => p.name === "ops")?.containerPort, d.name).toBe(9090);
      expect(admits(policies, namespaces, from("monitoring"), d.pod, 9090), d.name).toBe(true);
      for (const src of [from("default"), from("drover-deps"), from("drover-runtimes"), systemPeer])
        expect(admits(policies, namespaces, src, d.pod, 9090), `${d.name} from ${src.namespace}`).toBe(false);
    }
  });

  it("the API takes connections on 8080 (its routes, /readyz and /metrics) from anywhere, and nothing else", () => {
    const api = deployments.find((d) => d.name === "drover-api")!.pod;
    expect(admits(policies, namespaces, from("default"), api, 8080)).toBe(true);
    expect(admits(policies, namespaces, from("monitoring"), api, 9090)).toBe(false);
  });

  it("a runtime Pod's ops port takes scrapes only from ops-scraper namespaces; its command port only from the control plane", () => {
    for (const transport of ["http", "grpc"] as const) {
      const rt = runtimePod(transport);
      const command = RUNTIME_PORT[transport];
      expect(admits(policies, namespaces, from("monitoring"), rt, RUNTIME_OPS_PORT)).toBe(true);
      for (const src of [systemPeer, from("default"), from("drover-runtimes")])
        expect(admits(policies, namespaces, src, rt, RUNTIME_OPS_PORT), `${transport} ops from ${src.namespace}`).toBe(
          false,
        );
      expect(admits(policies, namespaces, systemPeer, rt, command)).toBe(true);
      for (const src of [from("monitoring"), from("default"), from("drover-runtimes")])
        expect(admits(policies, namespaces, src, rt, command), `${transport} command from ${src.namespace}`).toBe(
          false,
        );
    }
  });

  it("every probe names a declared port; the runtime's readiness is HTTP /readyz on its ops port", () => {
    for (const d of deployments)
      for (const c of d.pod.containers) {
        expect(portOf(c, c.readinessProbe), `${d.name} readiness`).toBeDefined();
        expect(portOf(c, c.livenessProbe), `${d.name} liveness`).toBeDefined();
        expect(c.readinessProbe?.httpGet?.path, d.name).toBe("/readyz");
      }
    for (const transport of ["http", "grpc"] as const) {
      const c = runtimePod(transport).containers[0]!;
      expect(c.readinessProbe?.httpGet?.path).toBe("/readyz");
      expect(portOf(c, c.readinessProbe)).toBe(RUNTIME_OPS_PORT);
    }
  });
});
