import { execFile } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { buildSync } from "esbuild";
import type { V1Pod } from "@kubernetes/client-node";

const run = promisify(execFile);
const REPO_ROOT = resolve(import.meta.dirname, "../../..");

/** The pod-app fixture's ports (test/k8s/fixtures/pod-app.ts). */
export const APP_HTTP_PORT = 8080;
export const APP_GRPC_PORT = 9090;

/**
 * Builds (cached) the runtime image with k8s/image/build.sh and returns its archive and reference:
 * what a real node imports and what its Pods run (`imagePullPolicy: IfNotPresent`, nothing to pull from).
 */
export async function runtimeImage(): Promise<{ archive: string; ref: string }> {
  const { stdout } = await run(join(REPO_ROOT, "k8s/image/build.sh"), ["runtime"], { maxBuffer: 1 << 20 });
  return { archive: join(REPO_ROOT, ".run/images/runtime.tar"), ref: stdout.trim().split("\n").pop() ?? "" };
}

/** Bundles test/k8s/fixtures/pod-app.ts (with its packages) into `<dir>/pod-app.mjs`, world-readable, for a hostPath mount. */
export function bundlePodApp(dir: string): string {
  mkdirSync(dir, { recursive: true, mode: 0o755 });
  chmodSync(dir, 0o755);
  buildSync({
    entryPoints: [join(REPO_ROOT, "test/k8s/fixtures/pod-app.ts")],
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node20",
    logLevel: "silent",
    outfile: join(dir, "pod-app.mjs"),
    banner: { js: "import{createRequire as __r}from'node:module';const require=__r(import.meta.url);" },
  });
  chmodSync(join(dir, "pod-app.mjs"), 0o644);
  return dir;
}

const fieldEnv = (name: string, fieldPath: string) => ({ name, valueFrom: { fieldRef: { fieldPath } } });

/**
 * The pod-app fixture as a real container: the runtime image's node (user 10001) runs the bundled
 * fixture from a read-only hostPath mount; POD_IP/POD_NAME/POD_UID come from the downward API.
 */
export function containerAppPod(
  name: string,
  image: string,
  fixtureDir: string,
  opts: { restartPolicy?: "Always" | "Never"; graceSeconds?: number; termDelayMs?: number } = {},
): V1Pod {
  return {
    metadata: { name, labels: { app: name } },
    spec: {
      restartPolicy: opts.restartPolicy ?? "Never",
      ...(opts.graceSeconds !== undefined ? { terminationGracePeriodSeconds: opts.graceSeconds } : {}),
      volumes: [{ name: "fixture", hostPath: { path: fixtureDir, type: "Directory" } }],
      containers: [
        {
          name: "app",
          image,
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
          ports: [{ name: "http", containerPort: APP_HTTP_PORT }],
          readinessProbe: { httpGet: { path: "/healthz", port: "http" }, periodSeconds: 1 },
        },
      ],
    },
  };
}

/**
 * The host pids of a container (from its cgroup in the node's pids hierarchy): `containerId` as in
 * the Pod status (`containerd://<id>`). The first is the container's main process (PID 1 inside).
 */
export function containerHostPids(cgroupRoot: string, podUid: string, containerId: string): number[] {
  const id = containerId.replace(/^containerd:\/\//, "");
  const found: number[] = [];
  const walk = (dir: string): void => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      if (!e.isDirectory()) continue;
      const sub = join(dir, e.name);
      if (e.name === id && dir.endsWith(`pod${podUid}`))
        found.push(...readFileSync(join(sub, "cgroup.procs"), "utf8").split("\n").filter(Boolean).map(Number));
      else walk(sub);
    }
  };
  const root = join("/sys/fs/cgroup/pids", cgroupRoot);
  if (existsSync(root)) walk(root);
  return found;
}
