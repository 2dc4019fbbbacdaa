import { KubeConfig } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { createKubernetesStrategy, parsePodIncarnation } from "./strategy.ts";

// An unreachable API server: these checks must refuse before any request is made.
const kc = new KubeConfig();
kc.loadFromOptions({
  clusters: [{ name: "c", server: "https://127.0.0.1:1", skipTLSVerify: true }],
  users: [{ name: "u", token: "t" }],
  contexts: [{ name: "x", cluster: "c", user: "u" }],
  currentContext: "x",
});
const base = { kubeconfig: kc, namespace: "runtimes", command: ["node"], image: "drover/runtime:dev" };

describe("KubernetesHostStrategy refusals (pure; no API call, proves no transport)", () => {
  it("kills only Pod incarnations: a process incarnation is host-spec-invalid", async () => {
    expect(parsePodIncarnation("pod:0f1e2d3c-aaaa-bbbb-cccc-000000000001")).toBe(
      "0f1e2d3c-aaaa-bbbb-cccc-000000000001",
    );
    expect(parsePodIncarnation("pid:42:123")).toBeUndefined();
    await expect(
      createKubernetesStrategy(base).kill("rt-a-1", { hostIncarnation: "pid:42:123" }, 1000),
    ).rejects.toMatchObject({ code: "host-spec-invalid" });
  });

  it("refuses gateway exposure without a Gateway (host-config-missing)", () => {
    expect(() => createKubernetesStrategy({ ...base, exposure: "gateway" })).toThrow(
      expect.objectContaining({ code: "host-config-missing" }),
    );
  });
});
