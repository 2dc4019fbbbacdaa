import { createHash, createHmac, randomBytes } from "node:crypto";
import { readFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { connectHarness } from "../../platform/nats-auth/server-keys.ts";
import type { DagInput, DroverEvent } from "../../contracts/index.ts";
import { createEventStore } from "../../streams/index.ts";
import { execRef } from "../../streams/subjects.ts";
import { startFerret, startRedis, type RunningServer } from "../../platform/local-servers.ts";
import { apiClient } from "../../platform/api-client.ts";
import { startControlPlane, type ControlPlane } from "../../platform/control-plane-processes.ts";
import { startOpenAiFake, type OpenAiFake } from "../support/openai-fake.ts";
import { eventually } from "../support/streams.ts";
import { clusterClients, freshNamespace } from "./support/cluster-client.ts";
import { runtimeHostConfig, startPodReachableNats } from "./support/runtime-pods.ts";

/**
 * The examples on Kubernetes hosts: every runtime a container on the local cluster's real node,
 * running the examples' worker modules the runtime image carries (named in the tenant's settings), with the tenant's secrets read from its own Kubernetes Secret through secretKeyRef;
 * every service a real process on real nats-server, Redis and FerretDB; `http` and `llm` steps talk
 * to an OpenAI-compatible fake served by this test.
 */
const ROOT = resolve(import.meta.dirname, "../..");
const DOC_DAG = JSON.parse(await readFile(join(ROOT, "examples/document-pipeline/dag.json"), "utf8")) as DagInput;
const DATA_DAG = JSON.parse(await readFile(join(ROOT, "examples/data-pipeline/dag.json"), "utf8")) as DagInput;
const DOCUMENT = Array.from({ length: 3000 }, (_, i) => `word${i}`).join(" ");
const LLM_KEY = `sk-llm-${randomBytes(12).toString("hex")}`;
const SIGNING_KEY = `sk-sign-${randomBytes(12).toString("hex")}`;
const DOCS_TOKEN = "token-k8s-docs-000000001";
const DATA_TOKEN = "token-k8s-data-000000001";

describe("the examples with runtime Pods: tenant workers and Kubernetes Secrets (local cluster's real API server)", () => {
  const servers: RunningServer[] = [];
  let cp: ControlPlane;
  let fake: OpenAiFake;
  let namespace: string;
  const { core } = clusterClients();

  const completed = async (token: string, id: string) =>
    eventually(
      `run ${id} completed`,
      async () => {
        const r = await apiClient(cp.apiUrl, token).run(id);
        if (r.body.status === "failed" || r.body.status === "rejected")
          throw new Error(`run ${id} ${r.body.status}: ${r.body.lastReason}`);
        return r.body.status === "completed" ? r.body : undefined;
      },
      120_000,
    );

  beforeAll(async () => {
    fake = await startOpenAiFake(DOCUMENT, inject("k8sNodeIp")); // where the Pods reach it
    servers.push(await startPodReachableNats(), await startRedis(), await startFerret());
    const [nats, redis, ferret] = servers as [RunningServer, RunningServer, RunningServer];
    namespace = await freshNamespace(core, "examples");
    const secret = (name: string, values: Record<string, string>) =>
      core.createNamespacedSecret({
        namespace,
        body: { metadata: { name }, stringData: { "secrets.json": JSON.stringify(values) } },
      });
    await secret("docs-secrets", { "llm-api-key": LLM_KEY });
    await secret("data-secrets", { "signing-key": SIGNING_KEY });
    const tenant = (tenantId: string, example: string, kinds: string[], secretName: string) => ({
      tenantId,
      isolationMode: "dedicated" as const,
      maxRuntimeInstances: 1,
      workersPerInstance: 3,
      maxWorkersPerRun: 3,
      hostProvider: "kubernetes" as const,
      // Inside the runtime Pod: the worker `make image` bundled into the image (relative to its /app).
      worker: { module: `examples/${example}/worker.mjs`, kinds },
      secrets: { kubernetesSecret: secretName },
      // The document comes from the test's fake on the node's address, outside the default egress policy.
      egress: { allow: [new URL(fake.url).host] },
    });
    cp = await startControlPlane({
      natsUrl: nats.url,
      redisUrl: redis.url,
      mongoUrl: ferret.url,
      services: ["capacity", "recovery", "provisioner", "admission", "forensics", "api"],
      config: {
        controlPlaneId: "cp-k8s-examples",
        heartbeatIntervalMs: 250,
        dispatchTimeoutMs: 3000,
        llmBaseUrl: fake.baseUrl,
        kubernetes: {
          kubeconfig: inject("k8sKubeconfig"),
          namespace,
          exposure: "pod-ip",
          namePrefix: `ex${randomBytes(2).toString("hex")}`,
          ...runtimeHostConfig(),
        },
        tenants: [
          tenant("t-docs", "document-pipeline", ["chunk-text", "merge-summaries"], "docs-secrets"),
          tenant("t-data", "data-pipeline", ["hash-records", "normalize", "sign"], "data-secrets"),
        ],
        tokens: {
          [DOCS_TOKEN]: { role: "tenant", tenantId: "t-docs" },
          [DATA_TOKEN]: { role: "tenant", tenantId: "t-data" },
        },
      },
    });
  }, 120_000);
  afterAll(async () => {
    await cp?.stop();
    await fake?.close();
    for (const s of servers) await s.stop();
  });

  it("the document pipeline runs on a runtime Pod: http fetch → custom chunking → llm fan-out with the bearer key from the tenant's Secret → custom merge", async () => {
    const sub = await apiClient(cp.apiUrl, DOCS_TOKEN).post("/v1/runs", {
      dag: DOC_DAG,
      input: { documentUrl: `${fake.url}/doc/k8s`, model: "fake-model", title: "word list" },
    });
    expect(sub.status).toBe(201);
    const run = await completed(DOCS_TOKEN, sub.body.sharedRunId);
    expect(run.output).toEqual({
      title: "word list",
      parts: 3,
      summary:
        "1. about: word0 word1 word2 word3\n2. about: word1000 word1001 word1002 word1003\n3. about: word2000 word2001 word2002 word2003",
    });
    expect([...fake.bearers]).toEqual([`Bearer ${LLM_KEY}`]);
    expect(fake.docGets.get("k8s")).toBe(1);
  });

  it("the data pipeline runs on a runtime Pod: custom steps hash, normalise and sign with the key from the tenant's Secret", async () => {
    const records = [
      { id: "a", name: " ada ", amount: 1.234 },
      { id: "b", name: "bob", amount: 2 },
    ];
    const sub = await apiClient(cp.apiUrl, DATA_TOKEN).post("/v1/runs", { dag: DATA_DAG, input: { records } });
    expect(sub.status).toBe(201);
    const run = await completed(DATA_TOKEN, sub.body.sharedRunId);
    const normalized = records.map((r) => ({
      id: r.id,
      name: r.name.trim().toUpperCase(),
      amount: Math.round(r.amount * 100) / 100,
      sha256: createHash("sha256").update(JSON.stringify(r)).digest("hex"),
    }));
    // Sign what the step received (the recorded output, as its journal holds it), as the worker does.
    const nc = await connectHarness({ servers: servers[0]!.url });
    try {
      const journal = await createEventStore(nc, cp.layout).read(execRef("t-data", run.executionId));
      const norm = journal.events.find(
        (e) => e.event.type === "exec.step-completed" && e.event.data.stepId === "normalize",
      )?.event as Extract<DroverEvent, { type: "exec.step-completed" }>;
      expect(norm.data.output).toEqual({ records: normalized, total: 3.23, count: 2 });
      expect(run.output).toEqual({
        algorithm: "hmac-sha256",
        signature: createHmac("sha256", SIGNING_KEY).update(JSON.stringify(norm.data.output)).digest("hex"),
      });
    } finally {
      await nc.close();
    }
  });

  it("every runtime was a Pod naming the worker module in its spec, with the tenant's secrets only by secretKeyRef (no value in any Pod spec)", async () => {
    const pods = (await core.listNamespacedPod({ namespace })).items;
    expect(pods.length).toBeGreaterThanOrEqual(2);
    const spec = JSON.stringify(pods.map((p) => p.spec));
    expect(spec).not.toContain(LLM_KEY);
    expect(spec).not.toContain(SIGNING_KEY);
    const envOf = (p: (typeof pods)[number]) => p.spec?.containers[0]?.env ?? [];
    const modules = pods.map((p) => envOf(p).find((e) => e.name === "DROVER_WORKER_MODULE")?.value).sort();
    expect(modules).toEqual(
      expect.arrayContaining(["examples/data-pipeline/worker.mjs", "examples/document-pipeline/worker.mjs"]),
    );
    const secretRefs = pods.map(
      (p) => envOf(p).find((e) => e.name === "DROVER_SECRETS_JSON")?.valueFrom?.secretKeyRef?.name,
    );
    expect(new Set(secretRefs)).toEqual(new Set(["docs-secrets", "data-secrets"]));
  });
});
