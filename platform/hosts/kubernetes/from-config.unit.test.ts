import { describe, expect, it } from "vitest";
import { DroverConfig, KubernetesHostConfig } from "../../../contracts/index.ts";

describe("kubernetes host configuration (pure, proves no transport)", () => {
  it("defaults to pod-ip exposure in drover-runtimes and refuses gateway exposure without a Gateway", () => {
    expect(KubernetesHostConfig.parse({})).toMatchObject({ namespace: "drover-runtimes", exposure: "pod-ip", namePrefix: "drover-rt", killGraceSeconds: 1 });
    expect(KubernetesHostConfig.safeParse({ exposure: "gateway" }).success).toBe(false);
    const gw = KubernetesHostConfig.parse({ exposure: "gateway", gateway: { name: "shared", namespace: "infra", className: "drover-local" } });
    expect(gw.gateway).toEqual({ name: "shared", namespace: "infra", className: "drover-local", httpPort: 8080, grpcPort: 8081 });
    expect(DroverConfig.safeParse({ controlPlaneId: "cp-a", kubernetes: { namespace: "Not_A_Label" } }).success).toBe(false);
  });
});
