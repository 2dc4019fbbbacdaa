import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { componentNice, startDaemon, stopDaemon, waitUntilReady } from "../lib/daemon.ts";
import { issueCert } from "../node/certs.ts";
import { generatePki, type Pki } from "./pki.ts";
import { getOk } from "./probes.ts";

/** The running etcd + kube-apiserver pair of a local cluster. */
export interface ControlPlane {
  readonly server: string;
  readonly pki: Pki;
  readonly etcdUrl: string;
}

export const SERVICE_CIDR = "10.96.0.0/16";
const FIRST_SERVICE_IP = "10.96.0.1";
/** The API server's audit log (JSON lines) under the cluster dir: every Pod delete, with its DeleteOptions. */
export const AUDIT_LOG = "audit.log";
// Only Pod deletes are audited (with the request body), so tests can read from the API server
// itself what the kubelet's finalizing delete carried (grace 0, UID precondition).
const AUDIT_POLICY = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: Request
  verbs: ["delete"]
  resources: [{ group: "", resources: ["pods"] }]
- level: None
`;

/**
 * Starts etcd (bin/etcd-local, the embed launcher) and kube-apiserver on the given free loopback
 * ports with a fresh PKI under `dir`, and resolves when etcd's /health and the API server's /readyz
 * both answer 200. Daemons are recorded in `dir` (etcd.json, kube-apiserver.json) so that
 * {@link stopControlPlane} — possibly from another process — stops exactly them. Throws with the
 * failing daemon's log tail on start-up failure (the caller stops what started).
 */
export async function startControlPlane(opts: {
  binDir: string;
  dir: string;
  ports: { etcdClient: number; etcdPeer: number; apiserver: number };
}): Promise<ControlPlane> {
  const { binDir, dir, ports } = opts;
  const pki = await generatePki(dir, FIRST_SERVICE_IP);
  // How the API server authenticates to kubelets (logs, exec, port-forward): a client certificate the
  // kubelets' CA accepts, in group system:masters so the kubelets' webhook authorization allows it.
  const kubeletClient = await issueCert(dir, dir, "apiserver-kubelet-client", {
    cn: "kube-apiserver-kubelet-client",
    org: "system:masters",
  });
  const etcdUrl = `http://127.0.0.1:${ports.etcdClient}`;
  const etcd = await startDaemon(
    "etcd",
    join(binDir, "etcd-local"),
    [
      `--data-dir=${join(dir, "etcd-data")}`,
      `--listen-client-url=${etcdUrl}`,
      `--listen-peer-url=http://127.0.0.1:${ports.etcdPeer}`,
    ],
    { logFile: join(dir, "etcd.log"), recordFile: join(dir, "etcd.json"), nice: componentNice() },
  );
  await waitUntilReady(etcd, () => getOk(`${etcdUrl}/health`), 60_000);

  const server = `https://127.0.0.1:${ports.apiserver}`;
  await writeFile(join(dir, "audit-policy.yaml"), AUDIT_POLICY);
  const apiserver = await startDaemon(
    "kube-apiserver",
    join(binDir, "kube-apiserver"),
    [
      `--etcd-servers=${etcdUrl}`,
      "--bind-address=127.0.0.1",
      `--secure-port=${ports.apiserver}`,
      `--tls-cert-file=${pki.servingCert}`,
      `--tls-private-key-file=${pki.servingKey}`,
      `--token-auth-file=${pki.tokenFile}`,
      `--client-ca-file=${pki.caCert}`, // kubelets authenticate with client certificates this CA signed
      "--anonymous-auth=false",
      // Real node identities: a kubelet (system:node:<name>) may touch only its own Node and its Pods.
      "--authorization-mode=Node,RBAC",
      "--enable-admission-plugins=NodeRestriction",
      `--kubelet-client-certificate=${kubeletClient.cert}`,
      `--kubelet-client-key=${kubeletClient.key}`,
      `--kubelet-certificate-authority=${pki.caCert}`,
      "--kubelet-preferred-address-types=InternalIP",
      `--service-cluster-ip-range=${SERVICE_CIDR}`,
      `--service-account-issuer=${server}`,
      `--service-account-key-file=${pki.saPublicKey}`,
      `--service-account-signing-key-file=${pki.saPrivateKey}`,
      // No controller-manager runs, so no namespace ever gets a `default` ServiceAccount: the
      // ServiceAccount admission plugin would refuse every Pod (envtest disables it for the same reason).
      "--disable-admission-plugins=ServiceAccount",
      "--allow-privileged=true",
      "--profiling=false",
      // The `kubernetes` Service would advertise a loopback endpoint nothing can use; leave it endpoint-less.
      "--endpoint-reconciler-type=none",
      `--cert-dir=${join(dir, "apiserver-certs")}`,
      `--audit-policy-file=${join(dir, "audit-policy.yaml")}`,
      `--audit-log-path=${join(dir, AUDIT_LOG)}`,
      "--audit-log-mode=blocking", // written synchronously as the handler returns (a client or watcher can see the result a moment before)
      "--v=1",
    ],
    { logFile: join(dir, "kube-apiserver.log"), recordFile: join(dir, "kube-apiserver.json"), nice: componentNice() },
  );
  const ca = await readFile(pki.caCert);
  await waitUntilReady(apiserver, () => getOk(`${server}/readyz`, { ca, token: pki.adminToken }), 120_000);
  return { server, pki, etcdUrl };
}

/** Stops kube-apiserver, then etcd (each only if it is still the recorded process). */
export async function stopControlPlane(dir: string): Promise<void> {
  await stopDaemon(join(dir, "kube-apiserver.json"));
  await stopDaemon(join(dir, "etcd.json"));
}
