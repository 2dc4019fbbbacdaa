import { describe, expect, it } from "vitest";
import { DroverConfig, KubernetesHostConfig } from "../../../contracts/index.ts";

describe("kubernetes host configuration (pure, proves no transport)", () => {
  it("defaults to pod-ip exposure in drover-runtimes and refuses gateway exposure without a Gateway", () => {
    expect(KubernetesHostConfig.parse({})).toMatchObject({
      namespace: "drover-runtimes",
      exposure: "pod-ip",
      namePrefix: "drover-rt",
      killGraceSeconds: 1,
      runtimeResources: { cpuRequest: "100m", memoryRequest: "128Mi", memoryLimit: "1Gi" },
    });
    expect(KubernetesHostConfig.safeParse({ exposure: "gateway" }).success).toBe(false);
    const gw = KubernetesHostConfig.parse({
      exposure: "gateway",
      gateway: { name: "shared", namespace: "infra", className: "drover-local" },
    });
    expect(gw.gateway).toEqual({
      name: "shared",
      namespace: "infra",
      className: "drover-local",
      httpPort: 8080,
      grpcPort: 8081,
    });
    expect(DroverConfig.safeParse({ controlPlaneId: "cp-a", kubernetes: { namespace: "Not_A_Label" } }).success).toBe(
      false,
    );
  });

  it("defaults the runtime's image and argv to what `make image` builds (no source checkout in the Pod)", () => {
    expect(KubernetesHostConfig.parse({})).toMatchObject({
      runtimeImage: "drover/runtime:dev",
      runtimeCommand: ["/usr/local/bin/node", "/app/runtime-loader.cjs", "/app/runtime.cjs"],
    });
    expect(KubernetesHostConfig.parse({}).workingDir).toBeUndefined();
  });

  it("accepts port-forward exposure with or without a listener address", () => {
    expect(KubernetesHostConfig.parse({ exposure: "port-forward" })).toMatchObject({ exposure: "port-forward" });
    expect(KubernetesHostConfig.parse({ exposure: "port-forward" }).forwardAddress).toBeUndefined();
    expect(KubernetesHostConfig.parse({ exposure: "port-forward", forwardAddress: "0.0.0.0" }).forwardAddress).toBe(
      "0.0.0.0",
    );
  });

  it("accepts node-port exposure with or without a node address, and no other exposure names", () => {
    expect(KubernetesHostConfig.parse({ exposure: "node-port" })).toMatchObject({ exposure: "node-port" });
    expect(KubernetesHostConfig.parse({ exposure: "node-port" }).nodeAddress).toBeUndefined();
    expect(KubernetesHostConfig.parse({ exposure: "node-port", nodeAddress: "10.0.0.7" }).nodeAddress).toBe("10.0.0.7");
    expect(KubernetesHostConfig.safeParse({ exposure: "host-port" }).success).toBe(false);
  });

  it("takes runtime Pod requests as Kubernetes quantities, keeping the defaults it is not given, and refuses anything else", () => {
    expect(KubernetesHostConfig.parse({ runtimeResources: { cpuRequest: "10m" } }).runtimeResources).toEqual({
      cpuRequest: "10m",
      memoryRequest: "128Mi",
      memoryLimit: "1Gi",
    });
    expect(
      KubernetesHostConfig.parse({ runtimeResources: { cpuRequest: "0.25", memoryLimit: "2Gi" } }).runtimeResources,
    ).toMatchObject({ cpuRequest: "0.25", memoryLimit: "2Gi" });
    for (const bad of [{ cpuRequest: "ten" }, { memoryRequest: "128 MiB" }, { cpuLimit: "1" }])
      expect(KubernetesHostConfig.safeParse({ runtimeResources: bad }).success).toBe(false);
  });
});
