import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import type { z } from "zod";
import type { KubernetesHostConfig } from "../../contracts/index.ts";
import { proofLine, runProof } from "../../proof/run-proof.ts";
import { DEFAULT_PROOF, type ProofOptions } from "../../proof/scenario-config.ts";
import { startRedis, type RunningServer } from "../../platform/local-servers.ts";
import { clusterClients, freshNamespace } from "./support/cluster-client.ts";
import { runtimeHostConfig, startPodReachableNats } from "./support/runtime-pods.ts";

/**
 * The crash-recovery proof (proof-and-bench.md) with every runtime a Pod on the local cluster's real
 * API server: the runtime process inside a Pod is SIGKILLed mid-execution, the kubelet reports the
 * terminated container, recovery fences the exact Pod UID and resumes the work on a new Pod.
 * Same assertions as for process hosts. PROOF_PARALLEL (default 5) sets P. On the tier's real node
 * (upstream kubelet, containerd, runc; runtime Pods from the runtime image, NATS at the node's
 * address); the proof over HTTP by Pod IP is real-node-proof.k8s.test.ts. Steps of 100 ms: see there.
 */
const P = Number(process.env.PROOF_PARALLEL ?? 5);
let nats: RunningServer;
let redis: RunningServer;
let namespace: string;

beforeAll(async () => {
  [nats, redis] = await Promise.all([startPodReachableNats(), startRedis()]);
  namespace = await freshNamespace(clusterClients().core, "proof");
});
afterAll(async () => {
  await Promise.all([nats?.stop(), redis?.stop()]);
});

async function prove(
  o: Partial<ProofOptions>,
  exposure: "pod-ip" | "gateway" | "node-port" | "port-forward",
): Promise<void> {
  const kubernetes: z.input<typeof KubernetesHostConfig> = {
    kubeconfig: inject("k8sKubeconfig"),
    namespace,
    exposure,
    namePrefix: `p${randomBytes(2).toString("hex")}`,
    ...runtimeHostConfig(),
    ...(exposure === "gateway" ? { gateway: { name: "drover-shared", namespace, className: "drover-local" } } : {}),
  };
  const report = await runProof(
    { ...DEFAULT_PROOF, parallel: P, stepMs: 100, host: "kubernetes", exposure, ...o },
    { natsUrl: nats.url, redisUrl: redis.url, kubernetes },
    () => undefined,
    600_000,
  );
  const line = proofLine(report);
  console.log(
    `${line}\n  kill→suspected p50/p99 ${report.latencies.suspected.p50}/${report.latencies.suspected.p99} ms, →fenced ${report.latencies.fenced.p50}/${report.latencies.fenced.p99} ms, →resumed ${report.latencies.resumed.p50}/${report.latencies.resumed.p99} ms\n` +
      `  request→Pod Ready p50/p99 ${report.startup.hostReady.p50}/${report.startup.hostReady.p99} ms, →route programmed ${report.startup.route.p50}/${report.startup.route.p99} ms, →capacity published ${report.startup.published.p50}/${report.startup.published.p99} ms`,
  );
  expect(report.startup.published.p50).toBeGreaterThan(0);
  for (const a of report.assertions) expect(a, `${a.name}: ${a.detail}`).toMatchObject({ ok: true });
  const parallel = o.parallel ?? P;
  expect(report.runs).toBe(9 * parallel);
  // As the process-host proof counts them (test/proof/crash-recovery.proof.test.ts): a run whose send to the
  // runtime failed at the kill (seen over port-forward tunnels: sends_failed=2 at P=2), or that admission had not
  // yet placed, was never in its local queue; it is placed as ordinary work, and the proof's assertions check it
  // started exactly once after (proof/send-failed.ts).
  expect(report.recovered + report.sendsFailed + report.notPlaced).toBe(6 * parallel);
  expect(line).toMatch(/duplicates=0 lost=0 safe_leaks=0 fence_violations=0 replay_failures=0 result=PASS$/);
}

describe(`crash-recovery proof at P=${P} with runtime Pods, against the local cluster's real API server`, () => {
  it("SIGKILLed runtime containers over gRPC through the shared Gateway: the same guarantees", async () => {
    await prove({ transport: "grpc" }, "gateway");
  });
  it("SIGKILLed runtime containers over gRPC through per-runtime NodePort Services (the local cluster's node-port proxy): the same guarantees", async () => {
    await prove({ transport: "grpc", parallel: Math.min(P, 2) }, "node-port");
  });
  it("SIGKILLed runtime containers over HTTP through the provisioner's port-forward listeners (pods/portforward tunnels to the real kubelet): the same guarantees", async () => {
    await prove({ transport: "http", parallel: Math.min(P, 2) }, "port-forward");
  });
  it("SIGSTOPped runtime containers (zombies: Running and Ready, but silent): health notices, the fence deletes the exact Pod UID, the same guarantees", async () => {
    await prove({ transport: "http", signal: "SIGSTOP", parallel: Math.min(P, 2) }, "pod-ip");
  });
});
