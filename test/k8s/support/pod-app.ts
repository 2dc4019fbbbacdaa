import { inject } from "vitest";
import type { V1Pod } from "@kubernetes/client-node";
import { APP_GRPC_PORT, APP_HTTP_PORT, containerHostPids } from "./container-app.ts";

/** What test/k8s/fixtures/pod-app.ts answers: which Pod and which process served the request. */
export interface AppIdentity {
  name: string;
  uid: string;
  ip: string;
  pid: number;
  path?: string;
}

export { APP_GRPC_PORT, APP_HTTP_PORT };

/**
 * A Pod whose container runs the pod-app fixture on the k8s tier's real node: the runtime image's
 * node runs the bundled fixture (global-setup.ts) from a read-only hostPath mount, HTTP and gRPC on
 * the Pod IP, POD_IP/POD_NAME/POD_UID from the downward API. Ready once HTTP answers (readiness
 * probe every second). `termDelayMs` delays its exit on SIGTERM (to observe Terminating).
 */
export function appPod(
  name: string,
  opts: {
    labels?: Record<string, string>;
    restartPolicy?: "Always" | "OnFailure" | "Never";
    termDelayMs?: number;
    graceSeconds?: number;
    nodeName?: string;
  } = {},
): V1Pod {
  const fieldEnv = (n: string, fieldPath: string) => ({ name: n, valueFrom: { fieldRef: { fieldPath } } });
  return {
    metadata: { name, labels: opts.labels ?? { app: name } },
    spec: {
      ...(opts.nodeName ? { nodeName: opts.nodeName } : {}),
      restartPolicy: opts.restartPolicy ?? "Never",
      terminationGracePeriodSeconds: opts.graceSeconds ?? 30,
      volumes: [{ name: "fixture", hostPath: { path: inject("k8sFixtureDir"), type: "Directory" } }],
      containers: [
        {
          name: "app",
          image: inject("k8sImage"),
          imagePullPolicy: "IfNotPresent",
          command: ["/usr/local/bin/node", "/fixture/pod-app.mjs"],
          volumeMounts: [{ name: "fixture", mountPath: "/fixture", readOnly: true }],
          env: [
            fieldEnv("POD_IP", "status.podIP"),
            fieldEnv("POD_NAME", "metadata.name"),
            fieldEnv("POD_UID", "metadata.uid"),
            { name: "HTTP_PORT", value: String(APP_HTTP_PORT) },
            { name: "GRPC_PORT", value: String(APP_GRPC_PORT) },
            { name: "TERM_DELAY_MS", value: String(opts.termDelayMs ?? 0) },
          ],
          ports: [
            { name: "http", containerPort: APP_HTTP_PORT },
            { name: "grpc", containerPort: APP_GRPC_PORT },
          ],
          readinessProbe: { httpGet: { path: "/healthz", port: "http" }, periodSeconds: 1 },
          resources: { requests: { cpu: "10m" } },
        },
      ],
    },
  };
}

/**
 * A stand-in for the runtime in a runtime Pod (whose spec mounts nothing from the host): the runtime
 * image's node with an inline program that answers HTTP on $HTTP_PORT and /readyz on the ops port
 * (the Pod's readiness probe), and exits 0 $TERM_DELAY_MS after SIGTERM.
 */
export const APP_COMMAND = [
  "/usr/local/bin/node",
  "-e",
  [
    'const h = require("node:http");',
    'const ok = (q, s) => s.end("ok");',
    "const a = h.createServer(ok).listen(Number(process.env.HTTP_PORT || 8080));",
    "const o = h.createServer(ok).listen(Number(process.env.DROVER_OPS_PORT || 9091));",
    "const stop = () => { a.close(); o.close(); process.exit(0); };",
    'process.on("SIGTERM", () => setTimeout(stop, Number(process.env.TERM_DELAY_MS || 0)));',
  ].join(" "),
];

/** GET http://ip:port/path (optionally with headers) → status and JSON body (undefined if not JSON). */
export async function httpGet(
  url: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: AppIdentity | undefined; text: string }> {
  const res = await fetch(url, { headers, signal: AbortSignal.timeout(5_000) });
  const text = await res.text();
  let body: AppIdentity | undefined;
  try {
    body = JSON.parse(text) as AppIdentity;
  } catch {
    body = undefined;
  }
  return { status: res.status, body, text };
}

/** The host pid of a fixture Pod's container main process (PID 1 inside), from the node's cgroups; -1 if none. */
export function appHostPid(p: V1Pod | undefined): number {
  const cs = p?.status?.containerStatuses?.[0];
  return containerHostPids(inject("k8sCgroupRoot"), p?.metadata?.uid ?? "", cs?.containerID ?? "")[0] ?? -1;
}
