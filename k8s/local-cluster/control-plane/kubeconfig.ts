import { readFile, writeFile } from "node:fs/promises";
import { KubeConfig } from "@kubernetes/client-node";

/**
 * Writes a kubeconfig (context `drover-local`) usable by kubectl and @kubernetes/client-node:
 * the server URL, the CA inline, and the admin bearer token. Mode 0600: it is a credential.
 */
export async function writeKubeconfig(path: string, server: string, caCertFile: string, token: string): Promise<void> {
  const ca = Buffer.from(await readFile(caCertFile)).toString("base64");
  const yaml = [
    "apiVersion: v1",
    "kind: Config",
    "clusters:",
    "- name: drover-local",
    "  cluster:",
    `    server: ${server}`,
    `    certificate-authority-data: ${ca}`,
    "users:",
    "- name: drover-admin",
    "  user:",
    `    token: ${token}`,
    "contexts:",
    "- name: drover-local",
    "  context: { cluster: drover-local, user: drover-admin, namespace: default }",
    "current-context: drover-local",
    "",
  ].join("\n");
  await writeFile(path, yaml, { mode: 0o600 });
}

/** Loads a kubeconfig file written by {@link writeKubeconfig} (or any other). Throws if unreadable. */
export function loadKubeconfig(path: string): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromFile(path);
  return kc;
}
