import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";

const run = promisify(execFile);

/** Files of the local cluster's throw-away PKI (all under one directory). */
export interface Pki {
  readonly caCert: string;
  readonly servingCert: string;
  readonly servingKey: string;
  readonly saPublicKey: string;
  readonly saPrivateKey: string;
  readonly tokenFile: string;
  /** Bearer token of the `drover-admin` user (group system:masters). */
  readonly adminToken: string;
  /** Bearer tokens of the users `system:kube-scheduler` and `system:kube-controller-manager` (bootstrap RBAC roles). */
  readonly schedulerToken: string;
  readonly controllerManagerToken: string;
}

/**
 * Generates, with the openssl CLI, a fresh CA, an API server serving certificate for loopback
 * (IP 127.0.0.1, the first service IP, localhost and the kubernetes.default names), an ECDSA
 * service-account signing key pair and a token file with one admin token. Nothing is reused
 * between clusters, so a leaked file is worth nothing after `k8s-down`. Throws when openssl fails.
 */
export async function generatePki(dir: string, firstServiceIp: string): Promise<Pki> {
  const f = (name: string): string => join(dir, name);
  const ssl = (...args: string[]) => run("openssl", args);
  await ssl(
    "req",
    "-x509",
    "-newkey",
    "ec",
    "-pkeyopt",
    "ec_paramgen_curve:prime256v1",
    "-nodes",
    "-keyout",
    f("ca.key"),
    "-out",
    f("ca.crt"),
    "-days",
    "30",
    "-subj",
    "/CN=drover-local-cluster-ca",
  );
  const sans = [
    "IP:127.0.0.1",
    `IP:${firstServiceIp}`,
    "DNS:localhost",
    "DNS:kubernetes",
    "DNS:kubernetes.default",
    "DNS:kubernetes.default.svc",
    "DNS:kubernetes.default.svc.cluster.local",
  ].join(",");
  await writeFile(
    f("serving.ext"),
    `subjectAltName=${sans}\nextendedKeyUsage=serverAuth\nkeyUsage=digitalSignature,keyEncipherment\n`,
  );
  await ssl(
    "req",
    "-newkey",
    "ec",
    "-pkeyopt",
    "ec_paramgen_curve:prime256v1",
    "-nodes",
    "-keyout",
    f("apiserver.key"),
    "-out",
    f("apiserver.csr"),
    "-subj",
    "/CN=kube-apiserver",
  );
  await ssl(
    "x509",
    "-req",
    "-in",
    f("apiserver.csr"),
    "-CA",
    f("ca.crt"),
    "-CAkey",
    f("ca.key"),
    "-CAcreateserial",
    "-out",
    f("apiserver.crt"),
    "-days",
    "30",
    "-extfile",
    f("serving.ext"),
  );
  await ssl("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-out", f("sa.key"));
  await ssl("pkey", "-in", f("sa.key"), "-pubout", "-out", f("sa.pub"));
  const [adminToken, schedulerToken, controllerManagerToken] = [0, 1, 2].map(() => randomBytes(24).toString("hex"));
  // token,user,uid,"group1,group2" — the format of --token-auth-file. The scheduler and the controller
  // manager get only what the API server's bootstrap RBAC grants their well-known user names.
  await writeFile(
    f("tokens.csv"),
    [
      `${adminToken},drover-admin,drover-admin,"system:masters"`,
      `${schedulerToken},system:kube-scheduler,system:kube-scheduler`,
      `${controllerManagerToken},system:kube-controller-manager,system:kube-controller-manager`,
      "",
    ].join("\n"),
    { mode: 0o600 },
  );
  return {
    caCert: f("ca.crt"),
    servingCert: f("apiserver.crt"),
    servingKey: f("apiserver.key"),
    saPublicKey: f("sa.pub"),
    saPrivateKey: f("sa.key"),
    tokenFile: f("tokens.csv"),
    adminToken: adminToken!,
    schedulerToken: schedulerToken!,
    controllerManagerToken: controllerManagerToken!,
  };
}
