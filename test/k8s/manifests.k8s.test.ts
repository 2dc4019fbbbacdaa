import { execFile } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { loadAllYaml, type V1Job, type V1PodSpec } from "@kubernetes/client-node";
import { beforeAll, describe, expect, inject, it, onTestFinished } from "vitest";
import { DroverConfig } from "../../contracts/index.ts";

// k8s/drover/ (drover deployed to a cluster) against the local cluster's real API server: the
// server validates every object (schema, CRDs, RBAC references) in a dry run, and the applied RBAC
// is checked with `kubectl auth can-i` for each service's own ServiceAccount.
const DIR = resolve(import.meta.dirname, "../../k8s/drover");
const SA = (service: string) => `system:serviceaccount:drover-system:drover-${service}`;
const run = promisify(execFile);
let kubeconfig: string;
const kubectl = async (...args: string[]): Promise<string> =>
  (await run("kubectl", ["--kubeconfig", kubeconfig, ...args])).stdout;
const canI = async (verb: string, resource: string, ns: string, service = "provisioner"): Promise<string> =>
  (
    await run("kubectl", [
      "--kubeconfig",
      kubeconfig,
      "auth",
      "can-i",
      verb,
      // `pods/portforward` → `pods --subresource=portforward`.
      ...(resource.includes("/") ? [resource.split("/")[0]!, `--subresource=${resource.split("/")[1]}`] : [resource]),
      "-n",
      ns,
      "--as",
      SA(service),
    ]).catch((e: { stdout: string }) => e)
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
    expect(out).toContain("job.batch/drover-setup");
  });

  it("the setup identity runs only as the setup Job, under its own ServiceAccount and Secret; no Deployment holds it", async () => {
    const [job] = loadAllYaml(readFileSync(join(DIR, "25-setup-job.yaml"), "utf8")) as V1Job[];
    const pod = job!.spec!.template.spec!;
    expect(pod.serviceAccountName).toBe("drover-setup");
    expect(pod.volumes?.find((v) => v.name === "nats-ca")?.secret).toEqual({
      secretName: "drover-nats-ca",
      optional: true,
    });
    expect(pod.automountServiceAccountToken).toBe(false);
    expect(pod.securityContext).toMatchObject({ runAsNonRoot: true, seccompProfile: { type: "RuntimeDefault" } });
    const [c] = pod.containers;
    expect(c!.command).toEqual(["node", "--import", "tsx", "cli/drover.ts", "admin", "setup"]);
    expect(c!.securityContext).toEqual({
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
      capabilities: { drop: ["ALL"] },
    });
    expect(c!.envFrom).toBeUndefined();
    expect(c!.env?.find((e) => e.name === "NATS_CREDS")?.valueFrom?.secretKeyRef).toEqual({
      name: "drover-nats-setup",
      key: "setup",
    });
    // No service references the setup Secret or a `setup` key of any Secret.
    const deployments = loadAllYaml(readFileSync(join(DIR, "30-services.yaml"), "utf8")).filter(
      (o: { kind: string }) => o.kind === "Deployment",
    ) as { spec: { template: { spec: V1PodSpec } } }[];
    const refs = deployments.flatMap((d) =>
      d.spec.template.spec.containers.flatMap((x) => (x.env ?? []).flatMap((e) => e.valueFrom?.secretKeyRef ?? [])),
    );
    expect(refs.length).toBeGreaterThan(6);
    expect(refs.filter((r) => r.name === "drover-nats-setup" || r.key === "setup")).toEqual([]);
    // Its ServiceAccount has no API rights at all.
    for (const ns of ["drover-system", "drover-runtimes"])
      for (const [verb, resource] of [
        ["get", "secrets"],
        ["get", "pods"],
        ["create", "pods"],
      ])
        expect(await canI(verb as string, resource as string, ns, "setup"), `${verb} ${resource} in ${ns}`).toBe("no");
  });

  it("scripts/nats-auth.ts k8s-secret prints the services' Secret without the setup identity and the setup Job's Secret with it alone; the API server accepts both", async () => {
    const dir = mkdtempSync(join(tmpdir(), "drover-k8s-secret-"));
    // Keys and seeds: removed once the test ends, whatever its outcome.
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    const script = resolve(import.meta.dirname, "../../scripts/nats-auth.ts");
    await run(process.execPath, ["--import", "tsx", script, "config", dir, "127.0.0.1", "4222", join(dir, "js")]);
    const printed = (await run(process.execPath, ["--import", "tsx", script, "k8s-secret", dir])).stdout;
    const list = JSON.parse(printed) as { items: { metadata: { name: string }; stringData: Record<string, string> }[] };
    const byName = new Map(list.items.map((i) => [i.metadata.name, Object.keys(i.stringData).sort()]));
    expect(byName.get("drover-nats")).toEqual(
      [
        "admission",
        "api",
        "callout-seed",
        "capacity",
        "forensics",
        "kicker",
        "operator",
        "provisioner",
        "recovery",
        "scheduler",
      ].sort(),
    );
    expect(byName.get("drover-nats-setup")).toEqual(["setup"]);
    writeFileSync(join(dir, "secrets.json"), printed);
    const out = await kubectl("apply", "--dry-run=server", "-f", join(dir, "secrets.json"));
    expect(out).toContain("secret/drover-nats-setup");
    expect(out).toContain("secret/drover-nats ");
  });

  it("the shipped DROVER_CONFIG is a Secret, validates, stores tokens only as sha256 digests, hosts runtimes by Pod IP and refuses process hosts", () => {
    const objects = readdirSync(DIR)
      .filter((f) => f.endsWith(".yaml"))
      .flatMap(
        (f) => loadAllYaml(readFileSync(join(DIR, f), "utf8")) as { kind: string; metadata: { name: string } }[],
      );
    // No credentials in a ConfigMap: the only one is the NATS server's configuration, whose accounts,
    // users and route credentials live in the Secret it includes at start (15-nats.yaml).
    const maps = objects.filter((o) => o.kind === "ConfigMap") as unknown as {
      metadata: { name: string; namespace: string };
      data: Record<string, string>;
    }[];
    expect(maps.map((m) => `${m.metadata.namespace}/${m.metadata.name}`)).toEqual(["drover-deps/nats-config"]);
    const conf = Object.values(maps[0]!.data).join("\n");
    expect(conf).toContain("include ./secret/auth.conf");
    expect(conf).not.toMatch(/password|nkey|seed|token|accounts|authorization/i);
    const secret = objects.find((o) => o.kind === "Secret" && o.metadata.name === "drover-config") as unknown as {
      stringData: Record<string, string>;
    };
    const config = DroverConfig.parse(JSON.parse(secret.stringData["drover.json"] ?? "{}"));
    expect(config.kubernetes).toMatchObject({ namespace: "drover-runtimes", exposure: "pod-ip" });
    // Recovery's Pod could not prove a process host of the provisioner's Pod gone (docs/security.md).
    expect(config.processHosts).toBe("refused");
    expect(Object.keys(config.tokens).length).toBeGreaterThan(0);
    for (const key of Object.keys(config.tokens)) expect(key).toMatch(/^sha256:[0-9a-f]{64}$/);
  });

  it("every Deployment runs restricted (non-root, read-only root, no escalation, no capabilities, RuntimeDefault seccomp) with requests and limits, each under its own ServiceAccount", () => {
    const deployments = loadAllYaml(readFileSync(join(DIR, "30-services.yaml"), "utf8")).filter(
      (o: { kind: string }) => o.kind === "Deployment",
    ) as { metadata: { name: string }; spec: { template: { spec: V1PodSpec } } }[];
    expect(deployments).toHaveLength(7);
    const accounts = new Set<string>();
    for (const d of deployments) {
      const pod = d.spec.template.spec;
      accounts.add(pod.serviceAccountName ?? "");
      // The CA of a TLS nats-server, if the operator created it (docs/nats-identities.md "TLS").
      expect(pod.volumes?.find((v) => v.name === "nats-ca")?.secret, d.metadata.name).toEqual({
        secretName: "drover-nats-ca",
        optional: true,
      });
      expect(pod.securityContext, d.metadata.name).toMatchObject({
        runAsNonRoot: true,
        seccompProfile: { type: "RuntimeDefault" },
      });
      for (const c of pod.containers) {
        expect(c.securityContext, d.metadata.name).toEqual({
          allowPrivilegeEscalation: false,
          readOnlyRootFilesystem: true,
          capabilities: { drop: ["ALL"] },
        });
        expect(Object.keys(c.resources?.requests ?? {}).sort(), d.metadata.name).toEqual(["cpu", "memory"]);
        expect(Object.keys(c.resources?.limits ?? {}).sort(), d.metadata.name).toEqual(["cpu", "memory"]);
      }
    }
    expect(accounts.size).toBe(7);
  });

  it("every service runs two replicas spread across nodes, each with a PodDisruptionBudget keeping one through a drain (issue 16)", () => {
    const objects = loadAllYaml(readFileSync(join(DIR, "30-services.yaml"), "utf8")) as {
      kind: string;
      metadata: { name: string };
      spec: Record<string, unknown> & { template?: { spec: V1PodSpec } };
    }[];
    const deployments = objects.filter((o) => o.kind === "Deployment");
    const pdbs = new Map(objects.filter((o) => o.kind === "PodDisruptionBudget").map((o) => [o.metadata.name, o.spec]));
    expect(deployments).toHaveLength(7);
    for (const d of deployments) {
      const name = d.metadata.name;
      expect(d.spec.replicas, name).toBe(2);
      expect(d.spec.strategy, name).toBeUndefined(); // rolling: no service needs Recreate (docs/decisions.md)
      const term =
        d.spec.template!.spec.affinity?.podAntiAffinity?.preferredDuringSchedulingIgnoredDuringExecution?.[0];
      expect(term?.podAffinityTerm, name).toEqual({
        topologyKey: "kubernetes.io/hostname",
        labelSelector: { matchLabels: { "app.kubernetes.io/name": name } },
      });
      expect(pdbs.get(name), name).toEqual({
        minAvailable: 1,
        selector: { matchLabels: { "app.kubernetes.io/name": name } },
      });
    }
  });

  it("the namespaces enforce Pod Security Admission restricted", async () => {
    for (const ns of ["drover-system", "drover-runtimes"])
      expect(
        await kubectl(
          "get",
          "namespace",
          ns,
          "-o",
          "jsonpath={.metadata.labels.pod-security\\.kubernetes\\.io/enforce}",
        ),
      ).toBe("restricted");
  });

  it("RBAC lets the provisioner manage runtime Pods, Services, Secrets and routes, and port-forward to runtime Pods, in the runtime namespace only", async () => {
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
    // port-forward exposure: the tunnel subresource, in the runtime namespace only; exec/attach never.
    expect(await canI("create", "pods/portforward", "drover-runtimes")).toBe("yes");
    expect(await canI("get", "pods/portforward", "drover-runtimes")).toBe("yes");
    expect(await canI("create", "pods/portforward", "drover-system")).toBe("no");
    expect(await canI("create", "pods/exec", "drover-runtimes")).toBe("no");
    expect(await canI("create", "pods/portforward", "drover-runtimes", "recovery")).toBe("no");
    expect(await canI("create", "pods", "default")).toBe("no");
    expect(await canI("get", "secrets", "drover-system")).toBe("no");
    expect(await canI("update", "pods", "drover-runtimes")).toBe("no");
    expect(await canI("create", "nodes", "drover-runtimes")).toBe("no");
    // Secrets are read by name, never listed.
    expect(await canI("list", "secrets", "drover-runtimes")).toBe("no");
  });

  it("RBAC lets recovery fence (read and delete runtime objects) but create nothing; the other services get nothing", async () => {
    expect(await canI("delete", "pods", "drover-runtimes", "recovery")).toBe("yes");
    expect(await canI("watch", "pods", "drover-runtimes", "recovery")).toBe("yes");
    expect(await canI("delete", "secrets", "drover-runtimes", "recovery")).toBe("yes");
    expect(await canI("create", "pods", "drover-runtimes", "recovery")).toBe("no");
    expect(await canI("create", "secrets", "drover-runtimes", "recovery")).toBe("no");
    expect(await canI("list", "secrets", "drover-runtimes", "recovery")).toBe("no");
    for (const service of ["api", "admission", "capacity", "forensics"]) {
      expect(await canI("get", "pods", "drover-runtimes", service), service).toBe("no");
      expect(await canI("get", "secrets", "drover-runtimes", service), service).toBe("no");
    }
  });
});
