import { describe, expect, it } from "vitest";
import { hostSpec } from "../../../test/support/host-processes.ts";
import { labelValue, resourceName, shortHash } from "./names.ts";
import { buildRuntimeRoute, routeVerdict, type SharedGateway } from "./routes.ts";
import { allocatedNodePort, nodePortAddress } from "./node-port-exposure.ts";
import {
  buildNodePortService,
  buildRuntimePod,
  buildRuntimeService,
  buildTokenSecret,
  DEFAULT_RUNTIME_RESOURCES,
  L,
  runtimeMetadata,
  runtimeNames,
  RUNTIME_OPS_PORT,
  RUNTIME_PORT,
  sameIdentity,
  type RuntimePodOptions,
} from "./spec.ts";

const OPTS: RuntimePodOptions = {
  namespace: "runtimes",
  command: ["node", "--import", "tsx", "services/runtime/main.ts"],
  image: "drover/runtime:dev",
};
const GW: SharedGateway = {
  name: "shared",
  namespace: "infra",
  className: "drover-local",
  httpPort: 8080,
  grpcPort: 8081,
};
const DNS1123 = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

describe("Kubernetes runtime object builders (pure; prove no transport and no cluster)", () => {
  it("names are <prefix>-<suffix>-<12 hex of sha256(id)>, DNS-1123, at most 63 characters, and stable", () => {
    const id = "rt-tenant-a-0001";
    const hash = shortHash(id);
    expect(hash).toMatch(/^[0-9a-f]{12}$/);
    expect(resourceName("drover-rt", id, id)).toBe(`drover-rt-rt-tenant-a-0001-${hash}`);
    expect(runtimeNames("drover-rt", id)).toEqual(runtimeNames("drover-rt", id));
    const long = `rt-${"x".repeat(60)}`;
    const longer = `rt-${"x".repeat(59)}y`;
    for (const n of [
      resourceName("drover-rt", long, long),
      resourceName("Drover_RT", "A.B", "a"),
      runtimeNames("p", long).secret,
    ]) {
      expect(n.length).toBeLessThanOrEqual(63);
      expect(n).toMatch(DNS1123);
    }
    // Truncation never makes two ids collide: the hash of the full id survives.
    expect(resourceName("drover-rt", long, long)).not.toBe(resourceName("drover-rt", longer, longer));
    expect(resourceName("drover-rt", long, long).endsWith(shortHash(long))).toBe(true);
  });

  it("keeps valid label values and turns longer ones into a readable prefix plus the hash", () => {
    expect(labelValue("tenant-a")).toBe("tenant-a");
    const long = "t".repeat(70);
    expect(labelValue(long)).toBe(`${"t".repeat(50)}-${shortHash(long)}`);
    expect(labelValue("-bad value-")).toMatch(/^bad-value-[0-9a-f]{12}$/);
  });

  it("labels and annotates every identity field, annotations keeping full values", () => {
    const spec = hostSpec({ runtimeInstanceId: "rt-a-1", tenantId: "tenant-a", tenantGroupId: "g".repeat(80) });
    const { labels, annotations } = runtimeMetadata(spec);
    expect(labels).toEqual({
      [L.controlPlane]: "cp-host-test",
      [L.runtime]: "rt-a-1",
      [L.tenant]: "tenant-a",
      [L.tenantGroup]: labelValue("g".repeat(80)),
      [L.provider]: "drover-runtime",
      [L.transport]: "http",
      [L.hostProvider]: "kubernetes",
      [L.managedBy]: "drover-control-plane",
    });
    expect(annotations[L.tenantGroup]).toBe("g".repeat(80));
    expect(Object.values(labels).every((v) => v.length <= 63)).toBe(true);
  });

  it("puts identity, tenant and sizing in env that configuration cannot override; the token only through the Secret", () => {
    const spec = hostSpec({ runtimeInstanceId: "rt-a-2", tenantId: undefined });
    const pod = buildRuntimePod(spec, {
      ...OPTS,
      baseEnv: {
        LOG: "debug",
        DROVER_RUNTIME_INSTANCE_ID: "rt-other",
        DROVER_TENANT_ID: "tenant-b",
        DROVER_WORKERS: "64",
        DROVER_COMMAND_TOKEN: "leaked-token-000000",
        DROVER_POD_UID: "x",
        DROVER_BIND_HOST: "0.0.0.0",
        DROVER_OPS_HOST: "0.0.0.0",
        DROVER_OPS_PORT: "1234",
      },
    });
    const env = pod.spec?.containers[0]?.env ?? [];
    const names = env.map((e) => e.name);
    expect(new Set(names).size).toBe(names.length);
    const value = (n: string) => env.find((e) => e.name === n);
    expect(value("LOG")?.value).toBe("debug");
    expect(value("DROVER_RUNTIME_INSTANCE_ID")?.value).toBe("rt-a-2");
    expect(value("DROVER_WORKERS")?.value).toBe("1");
    expect(value("DROVER_TENANT_ID")).toBeUndefined();
    expect(value("DROVER_PORT")?.value).toBe("8080");
    expect(value("DROVER_BIND_HOST")?.valueFrom?.fieldRef?.fieldPath).toBe("status.podIP");
    expect(value("DROVER_POD_UID")?.valueFrom?.fieldRef?.fieldPath).toBe("metadata.uid");
    expect(value("DROVER_COMMAND_TOKEN")?.valueFrom?.secretKeyRef).toEqual({
      name: runtimeNames("drover-rt", "rt-a-2").secret,
      key: "token",
    });
    expect(JSON.stringify(pod)).not.toContain(spec.commandToken);
    expect(buildTokenSecret(spec, OPTS).stringData).toEqual({ token: spec.commandToken });
    expect(pod.spec?.restartPolicy).toBe("Never");
    // port-forward exposure: the kubelet dials localhost inside the Pod, so the command port binds every address.
    const forwarded = buildRuntimePod(spec, { ...OPTS, bindAllAddresses: true }).spec?.containers[0]?.env ?? [];
    expect(forwarded.find((e) => e.name === "DROVER_BIND_HOST")).toEqual({
      name: "DROVER_BIND_HOST",
      value: "0.0.0.0",
    });
    expect(forwarded.find((e) => e.name === "DROVER_OPS_HOST")?.valueFrom?.fieldRef?.fieldPath).toBe("status.podIP");
  });

  it("a runtime whose worker version names an image runs that image; otherwise the strategy's (docs/worker-versions.md)", () => {
    const spec = hostSpec({ runtimeInstanceId: "rt-tenant-a-0001" });
    expect(buildRuntimePod(spec, OPTS).spec?.containers[0]?.image).toBe("drover/runtime:dev");
    const pinned = `drover/runtime@sha256:${"a".repeat(64)}`;
    expect(buildRuntimePod({ ...spec, image: pinned }, OPTS).spec?.containers[0]?.image).toBe(pinned);
  });

  it("mounts the NATS CA Secret read-only and points NATS_CA_FILE at it when natsCaSecret is set; no CA and no path of the provisioner's otherwise", () => {
    const spec = hostSpec({ natsCaFile: "/provisioner/only/ca.pem" });
    const plain = buildRuntimePod(spec, { ...OPTS, baseEnv: { NATS_CA_FILE: "/elsewhere/ca.pem" } });
    const c0 = plain.spec!.containers[0]!;
    expect(c0.env!.filter((e) => e.name === "NATS_CA_FILE")).toEqual([]);
    expect(plain.spec!.volumes!.map((v) => v.name)).toEqual(["tmp"]);
    const pod = buildRuntimePod(spec, { ...OPTS, natsCaSecret: "drover-nats-ca" });
    const c = pod.spec!.containers[0]!;
    expect(c.env!.filter((e) => e.name === "NATS_CA_FILE")).toEqual([
      { name: "NATS_CA_FILE", value: "/etc/drover-nats-ca/ca.pem" },
    ]);
    expect(pod.spec!.volumes!.find((v) => v.name === "nats-ca")).toEqual({
      name: "nats-ca",
      secret: { secretName: "drover-nats-ca", items: [{ key: "ca.pem", path: "ca.pem" }] },
    });
    expect(c.volumeMounts).toContainEqual({ name: "nats-ca", mountPath: "/etc/drover-nats-ca", readOnly: true });
  });

  it("requests 100m CPU and 128Mi by default, takes configured requests and memory limit, and limits CPU to the worker count", () => {
    const spec = hostSpec({
      runtimeInstanceId: "rt-res-1",
      sizing: { workers: 3, maxConcurrentRuns: 1, localQueueCapacity: 2, maxWorkersPerRun: 1 },
    });
    const res = (o: RuntimePodOptions) => buildRuntimePod(spec, o).spec?.containers[0]?.resources;
    expect(res(OPTS)).toEqual({
      requests: { cpu: DEFAULT_RUNTIME_RESOURCES.cpuRequest, memory: "128Mi" },
      limits: { cpu: String(spec.sizing.workers), memory: "1Gi" },
    });
    expect(DEFAULT_RUNTIME_RESOURCES.cpuRequest).toBe("100m");
    expect(res({ ...OPTS, resources: { cpuRequest: "10m", memoryRequest: "64Mi", memoryLimit: "512Mi" } })).toEqual({
      requests: { cpu: "10m", memory: "64Mi" },
      limits: { cpu: String(spec.sizing.workers), memory: "512Mi" },
    });
  });

  it("is ready by the runtime's own /readyz on its ops listener, bound to the Pod IP on a port configuration cannot move", () => {
    const pod = buildRuntimePod(hostSpec({ runtimeInstanceId: "rt-a-3", transport: "grpc" }), OPTS);
    const c = pod.spec!.containers[0]!;
    const value = (n: string) => c.env?.find((e) => e.name === n);
    expect(c.readinessProbe).toEqual({
      httpGet: { path: "/readyz", port: "ops" },
      periodSeconds: 1,
      failureThreshold: 3,
    });
    expect(c.ports).toEqual([
      { name: "grpc", containerPort: RUNTIME_PORT.grpc, protocol: "TCP" },
      { name: "ops", containerPort: RUNTIME_OPS_PORT, protocol: "TCP" },
    ]);
    expect(RUNTIME_OPS_PORT).not.toBe(RUNTIME_PORT.grpc);
    expect(value("DROVER_OPS_PORT")?.value).toBe(String(RUNTIME_OPS_PORT));
    expect(value("DROVER_OPS_HOST")?.valueFrom?.fieldRef?.fieldPath).toBe("status.podIP");
  });

  it("exposes gRPC as h2c on its Service and routes each transport with its own route kind by the exact routing header", () => {
    const spec = hostSpec({ runtimeInstanceId: "rt-g-1", transport: "grpc" });
    const svc = buildRuntimeService(spec, OPTS);
    expect(svc.spec?.ports).toEqual([
      { name: "grpc", port: 9090, targetPort: "grpc", appProtocol: "kubernetes.io/h2c" },
    ]);
    expect(svc.spec?.selector).toEqual({ [L.runtime]: "rt-g-1", [L.controlPlane]: "cp-host-test" });
    const route = buildRuntimeRoute(spec, OPTS, GW);
    expect(route.kind).toBe("GRPCRoute");
    expect(JSON.stringify(route.body)).toContain(
      '"headers":[{"type":"Exact","name":"x-drover-runtime-instance-id","value":"rt-g-1"}]',
    );
    expect(buildRuntimeRoute(hostSpec({ runtimeInstanceId: "rt-h-1" }), OPTS, GW).kind).toBe("HTTPRoute");
  });

  it("builds the node-port Service as a NodePort twin of the runtime Service under its own name, leaving the node port to the API server", () => {
    for (const transport of ["http", "grpc"] as const) {
      const spec = hostSpec({ runtimeInstanceId: `rt-np-${transport}`, transport });
      const names = runtimeNames("drover-rt", spec.runtimeInstanceId);
      const np = buildNodePortService(spec, OPTS);
      const plain = buildRuntimeService(spec, OPTS);
      expect(np.metadata).toEqual({ ...plain.metadata, name: names.nodePort });
      expect(np.spec).toEqual({ ...plain.spec, type: "NodePort" });
      expect(np.spec?.ports?.[0]).not.toHaveProperty("nodePort");
      expect(np.spec?.ports?.[0]?.appProtocol).toBe(transport === "grpc" ? "kubernetes.io/h2c" : "http");
      expect(new Set(Object.values(names)).size).toBe(3); // Pod, Service and route share one name; Secret and NodePort Service each have theirs
      expect(names.nodePort).toMatch(DNS1123);
      expect(names.nodePort.length).toBeLessThanOrEqual(63);
    }
    expect(runtimeNames("p", `rt-${"x".repeat(80)}`).nodePort.length).toBeLessThanOrEqual(63);
  });

  it("reads the allocated node port only from a NodePort Service and brackets IPv6 node addresses", () => {
    expect(allocatedNodePort({ spec: { type: "NodePort", ports: [{ port: 8080, nodePort: 31234 }] } })).toBe(31234);
    expect(allocatedNodePort({ spec: { type: "NodePort", ports: [{ port: 8080 }] } })).toBeUndefined();
    expect(
      allocatedNodePort({ spec: { type: "ClusterIP", ports: [{ port: 8080, nodePort: 31234 }] } }),
    ).toBeUndefined();
    expect(nodePortAddress("127.0.4.254", 31234)).toBe("127.0.4.254:31234");
    expect(nodePortAddress("fd00::1", 31234)).toBe("[fd00::1]:31234");
  });

  it("adopts by identity, not by name: another tenant, sizing or an extra drover label is a collision", () => {
    const spec = hostSpec({ runtimeInstanceId: "rt-a-3" });
    const mine = runtimeMetadata(spec);
    expect(sameIdentity(mine, { name: "x", ...mine })).toBe(true);
    expect(sameIdentity(mine, runtimeMetadata({ ...spec, commandToken: "another-token-00000000" }))).toBe(true);
    expect(sameIdentity(mine, runtimeMetadata({ ...spec, tenantId: "tenant-b" }))).toBe(false);
    expect(sameIdentity(mine, runtimeMetadata({ ...spec, sizing: { ...spec.sizing, workers: 2 } }))).toBe(false);
    expect(
      sameIdentity(mine, { labels: { ...mine.labels, "drover.dev/extra": "1" }, annotations: mine.annotations }),
    ).toBe(false);
    expect(sameIdentity(mine, { labels: { app: "foreign" } })).toBe(false);
  });

  it("calls a route ready only with Accepted and ResolvedRefs True at its current generation", () => {
    const parent = (gen: number, accepted: string) => ({
      parentRef: { name: "shared", namespace: "infra" },
      conditions: [
        {
          type: "Accepted",
          status: accepted,
          reason: accepted === "True" ? "Accepted" : "NotAllowedByListeners",
          observedGeneration: gen,
        },
        { type: "ResolvedRefs", status: "True", reason: "ResolvedRefs", observedGeneration: gen },
      ],
    });
    expect(routeVerdict({ metadata: { generation: 2 }, status: { parents: [parent(2, "True")] } }, GW)).toEqual({
      state: "ready",
    });
    expect(routeVerdict({ metadata: { generation: 3 }, status: { parents: [parent(2, "True")] } }, GW).state).toBe(
      "pending",
    );
    expect(routeVerdict({ metadata: { generation: 2 }, status: { parents: [parent(2, "False")] } }, GW).state).toBe(
      "refused",
    );
    expect(routeVerdict({ metadata: { generation: 1 } }, GW).state).toBe("pending");
  });
});
