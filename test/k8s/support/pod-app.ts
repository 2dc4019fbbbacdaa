import { join, resolve } from "node:path";
import type { V1Pod } from "@kubernetes/client-node";

const REPO_ROOT = resolve(import.meta.dirname, "../../..");

/** What test/k8s/fixtures/pod-app.ts answers: which Pod and which process served the request. */
export interface AppIdentity {
  name: string;
  uid: string;
  ip: string;
  pid: number;
  path?: string;
}

export const APP_HTTP_PORT = 8080;
export const APP_GRPC_PORT = 9090;

/**
 * A Pod whose container runs the pod-app fixture with node + tsx (no image: the local kubelet runs
 * the command as a process on the Pod's own loopback IP). Ready once HTTP answers (readiness probe
 * every second). `termDelayMs` delays its exit on SIGTERM (to observe Terminating).
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
  return {
    metadata: { name, labels: opts.labels ?? { app: name } },
    spec: {
      ...(opts.nodeName ? { nodeName: opts.nodeName } : {}),
      restartPolicy: opts.restartPolicy ?? "Never",
      terminationGracePeriodSeconds: opts.graceSeconds ?? 30,
      containers: [
        {
          name: "app",
          image: "drover.local/pod-app:test",
          command: [process.execPath, "--import", "tsx", join(REPO_ROOT, "test/k8s/fixtures/pod-app.ts")],
          workingDir: REPO_ROOT,
          env: [
            { name: "HTTP_PORT", value: String(APP_HTTP_PORT) },
            { name: "GRPC_PORT", value: String(APP_GRPC_PORT) },
            { name: "TERM_DELAY_MS", value: String(opts.termDelayMs ?? 0) },
          ],
          ports: [
            { name: "http", containerPort: APP_HTTP_PORT },
            { name: "grpc", containerPort: APP_GRPC_PORT },
          ],
          readinessProbe: { httpGet: { path: "/healthz", port: "http" }, periodSeconds: 1 },
        },
      ],
    },
  };
}

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
