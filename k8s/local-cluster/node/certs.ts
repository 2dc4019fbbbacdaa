import { execFile } from "node:child_process";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";

const run = promisify(execFile);

/** A key and certificate signed by the local cluster's CA (files under one directory). */
export interface IssuedCert {
  readonly cert: string;
  readonly key: string;
}

/**
 * Issues, with the openssl CLI, an ECDSA key and a 30-day certificate signed by the cluster CA
 * (`<caDir>/ca.crt`, `<caDir>/ca.key`): subject `/O=<org>/CN=<cn>` (Kubernetes reads O as groups,
 * CN as the user), for client authentication, or for serving when `ips` are given (IP SANs).
 */
export async function issueCert(
  caDir: string,
  outDir: string,
  base: string,
  subject: { cn: string; org?: string },
  ips: readonly string[] = [],
): Promise<IssuedCert> {
  const f = (suffix: string): string => join(outDir, `${base}.${suffix}`);
  const subj = `${subject.org ? `/O=${subject.org}` : ""}/CN=${subject.cn}`;
  await run("openssl", [
    "req",
    "-newkey",
    "ec",
    "-pkeyopt",
    "ec_paramgen_curve:prime256v1",
    "-nodes",
    "-keyout",
    f("key"),
    "-out",
    f("csr"),
    "-subj",
    subj,
  ]);
  const ext =
    ips.length > 0
      ? `subjectAltName=${ips.map((ip) => `IP:${ip}`).join(",")}\nextendedKeyUsage=serverAuth\nkeyUsage=digitalSignature,keyEncipherment\n`
      : "extendedKeyUsage=clientAuth\nkeyUsage=digitalSignature\n";
  await writeFile(f("ext"), ext);
  await run("openssl", [
    "x509",
    "-req",
    "-in",
    f("csr"),
    "-CA",
    join(caDir, "ca.crt"),
    "-CAkey",
    join(caDir, "ca.key"),
    "-CAcreateserial",
    "-out",
    f("crt"),
    "-days",
    "30",
    "-extfile",
    f("ext"),
  ]);
  return { cert: f("crt"), key: f("key") };
}

/** A kubeconfig authenticating with a client certificate (the kubelet's, as `system:node:<name>`). */
export async function writeCertKubeconfig(path: string, server: string, caFile: string, c: IssuedCert): Promise<void> {
  const yaml = [
    "apiVersion: v1",
    "kind: Config",
    "clusters:",
    `- name: local\n  cluster:\n    server: ${server}\n    certificate-authority: ${caFile}`,
    "users:",
    `- name: node\n  user:\n    client-certificate: ${c.cert}\n    client-key: ${c.key}`,
    "contexts:",
    "- name: local\n  context: { cluster: local, user: node }",
    "current-context: local",
    "",
  ].join("\n");
  await writeFile(path, yaml, { mode: 0o600 });
}

/** A kubeconfig authenticating with a bearer token (kube-scheduler, kube-controller-manager). */
export async function writeTokenKubeconfig(path: string, server: string, caFile: string, token: string): Promise<void> {
  const yaml = [
    "apiVersion: v1",
    "kind: Config",
    "clusters:",
    `- name: local\n  cluster:\n    server: ${server}\n    certificate-authority: ${caFile}`,
    "users:",
    `- name: component\n  user:\n    token: ${token}`,
    "contexts:",
    "- name: local\n  context: { cluster: local, user: component }",
    "current-context: local",
    "",
  ].join("\n");
  await writeFile(path, yaml, { mode: 0o600 });
}
