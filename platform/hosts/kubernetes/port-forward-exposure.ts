import type { CoreV1Api, KubeConfig } from "@kubernetes/client-node";
import type { ErrorCode } from "../../../contracts/index.ts";
import type { HostSpec } from "../types.ts";
import { apiFailure } from "./api-errors.ts";
import { probeExposure } from "./exposure-probe.ts";
import { openPodForward, type PodForward } from "./pod-forward.ts";
import { RUNTIME_PORT } from "./spec.ts";

export type PortForwardExposure =
  | { readonly ok: true; readonly endpoint: string; readonly forward: PodForward }
  | { readonly ok: false; readonly code: ErrorCode; readonly detail: string };

/**
 * The `route` layer of `port-forward` exposure, run once the exact Pod UID is Ready: opens this
 * runtime's local listener (pod-forward.ts) to the Pod's runtime port and sends GetQueueStatus
 * through it until this runtime answers. The endpoint published is the listener's address, so the
 * caller's `command` layer reaches the runtime through the forward too. Never throws; on failure the
 * listener is closed. After a tunnel failure the Pod is read: when its UID is gone or another, the
 * forward closes for good (connections are then refused; `revalidate` rejects). Reasons: `endpoint-resolution-failed` (the listener could not be opened),
 * `port-forward-probe-identity-mismatch` (another runtime answered through the forward),
 * `runtime-command-readiness-failed` (nothing answered in time: the last tunnel failure, e.g. no
 * `pods/portforward` right or a node whose kubelet does not stream, is in the detail).
 */
export async function exposeThroughPortForward(
  kc: KubeConfig,
  core: CoreV1Api,
  spec: HostSpec,
  namespace: string,
  pod: { readonly name: string; readonly uid: string },
  bindAddress: string,
  deadline: number,
  signal?: AbortSignal,
): Promise<PortForwardExposure> {
  const podName = pod.name;
  let forward: PodForward | undefined;
  let checking = false;
  // A tunnel that failed may mean the Pod is gone or replaced by a namesake: then the forward
  // retires itself (a pods/portforward is by name, the runtime is the exact UID).
  const onTunnelFailure = (): void => {
    if (checking || !forward || forward.closed()) return;
    checking = true;
    void core
      .readNamespacedPod({ namespace, name: podName })
      .then(
        (p) => p.metadata?.uid !== pod.uid,
        (e: unknown) => apiFailure(e)?.code === 404,
      )
      .then(async (gone) => {
        if (gone) await forward?.close();
      })
      .finally(() => (checking = false));
  };
  try {
    forward = await openPodForward(kc, namespace, podName, RUNTIME_PORT[spec.transport], bindAddress, onTunnelFailure);
  } catch (e) {
    return {
      ok: false,
      code: "endpoint-resolution-failed",
      detail: `local listener on ${bindAddress} for pods/portforward ${namespace}/${podName}: ${String(e)}`,
    };
  }
  const endpoint = spec.transport === "http" ? `http://${forward.address}` : forward.address;
  const via = `pods/portforward ${namespace}/${podName}`;
  const probe = await probeExposure(endpoint, spec, deadline, via, "port-forward-probe-identity-mismatch", signal);
  if (!probe) return { ok: true, endpoint, forward };
  const { lastFailure } = forward.stats();
  await forward.close();
  return { ok: false, ...probe, detail: lastFailure ? `${probe.detail}; last tunnel: ${lastFailure}` : probe.detail };
}
