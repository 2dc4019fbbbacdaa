import { CoreV1Api, type KubeConfig } from "@kubernetes/client-node";

/**
 * Polls the Node until its Ready condition is True and the kubelet's `node.kubernetes.io/not-ready`
 * taint is gone (lifted by the controller manager's node lifecycle controller); throws with the last
 * seen conditions and taints after `timeoutMs`.
 */
export async function waitForNodeReady(kc: KubeConfig, nodeName: string, timeoutMs: number): Promise<void> {
  const api = kc.makeApiClient(CoreV1Api);
  const deadline = Date.now() + timeoutMs;
  let last = "not registered";
  while (Date.now() < deadline) {
    const node = await api.readNode({ name: nodeName }).catch(() => undefined);
    if (node) {
      const ready = node.status?.conditions?.find((c) => c.type === "Ready");
      const taints = (node.spec?.taints ?? []).map((t) => `${t.key}:${t.effect}`);
      last = `Ready=${ready?.status ?? "?"} (${ready?.message ?? ""}), taints [${taints.join(", ")}]`;
      if (ready?.status === "True" && taints.length === 0) return;
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`node ${nodeName} not Ready and untainted within ${timeoutMs} ms: ${last}`);
}
