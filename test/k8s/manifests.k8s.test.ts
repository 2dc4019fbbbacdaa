import { execFile } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { loadAllYaml } from "@kubernetes/client-node";
import { beforeAll, describe, expect, inject, it } from "vitest";
import { DroverConfig } from "../../contracts/index.ts";

// k8s/drover/ (drover deployed to a cluster) against the local cluster's real API server: the
// server validates every object (schema, CRDs, RBAC references) in a dry run, and the applied RBAC
// is checked with `kubectl auth can-i` for the control plane's ServiceAccount.
const DIR = resolve(import.meta.dirname, "../../k8s/drover");
const SA = "system:serviceaccount:drover-system:drover-control-plane";
const run = promisify(execFile);
let kubeconfig: string;
const kubectl = async (...args: string[]): Promise<string> =>
  (await run("kubectl", ["--kubeconfig", kubeconfig, ...args])).stdout;
const canI = async (verb: string, resource: string, ns: string): Promise<string> =>
  (
    await run("kubectl", ["--kubeconfig", kubeconfig, "auth", "can-i", verb, resource, "-n", ns, "--as", SA]).catch(
      (e: { stdout: string }) => e,
    )
  ).stdout.trim();

beforeAll(async () => {
  kubeconfig = inject("k8sKubeconfig");
  // Namespaces and RBAC for real (the dry run of namespaced objects needs their namespace to exist).
  await kubectl("apply", "-f", join(DIR, "00-namespaces.yaml"));
  await kubectl("apply", "-f", join(DIR, "10-rbac.yaml"));
});

describe("drover's k8s/ manifests, against the local cluster's real API server", () => {
  it("every object passes the API server's validation in a server-side dry run", async () => {
    const out = await kubectl("apply", "--dry-run=server", "-f", DIR);
    const objects = readdirSync(DIR)
      .filter((f) => f.endsWith(".yaml"))
      .flatMap((f) => loadAllYaml(readFileSync(join(DIR, f), "utf8")));
    expect(out.trim().split("\n")).toHaveLength(objects.length);
    expect(out).toContain("deployment.apps/drover-provisioner");
    expect(out).toContain("gateway.gateway.networking.k8s.io/drover-shared");
  });

  it("the shipped DROVER_CONFIG validates and hosts runtimes on Kubernetes by Pod IP", () => {
    const cm = loadAllYaml(readFileSync(join(DIR, "20-config.yaml"), "utf8")).find(
      (o: { kind: string }) => o.kind === "ConfigMap",
    ) as { data: Record<string, string> };
    const config = DroverConfig.parse(JSON.parse(cm.data["drover.json"] ?? "{}"));
    expect(config.kubernetes).toMatchObject({ namespace: "drover-runtimes", exposure: "pod-ip" });
  });

  it("RBAC lets the control plane manage runtime Pods, Services, Secrets and routes in the runtime namespace only", async () => {
    for (const [verb, resource] of [
      ["create", "pods"],
      ["watch", "pods"],
      ["delete", "services"],
      ["create", "secrets"],
      ["create", "httproutes.gateway.networking.k8s.io"],
      ["delete", "grpcroutes.gateway.networking.k8s.io"],
    ]) {
      expect(await canI(verb as string, resource as string, "drover-runtimes"), `${verb} ${resource}`).toBe("yes");
    }
    expect(await canI("create", "pods", "default")).toBe("no");
    expect(await canI("get", "secrets", "drover-system")).toBe("no");
    expect(await canI("update", "pods", "drover-runtimes")).toBe("no");
    expect(await canI("create", "nodes", "drover-runtimes")).toBe("no");
  });
});
