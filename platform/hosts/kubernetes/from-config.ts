import type { KubernetesHostConfig } from "../../../contracts/index.ts";
import type { HostStrategy } from "../types.ts";
import { PooledKubeConfig } from "./kube-config.ts";
import { createKubernetesStrategy } from "./strategy.ts";

/**
 * The Kubernetes host strategy as configured in DROVER_CONFIG's `kubernetes` section: the
 * kubeconfig file when given, else the in-cluster service account (the control plane running in the
 * cluster), its API calls and watches reusing their TLS connections. Throws when the kubeconfig cannot be loaded (the service must not start half-configured);
 * the API server is first contacted on the first start or kill.
 */
export function kubernetesStrategyFromConfig(cfg: KubernetesHostConfig): HostStrategy {
  // One keep-alive connection pool to the API server for every call and watch (kube-config.ts).
  const kc = new PooledKubeConfig();
  if (cfg.kubeconfig) kc.loadFromFile(cfg.kubeconfig);
  else kc.loadFromCluster();
  return createKubernetesStrategy({
    kubeconfig: kc,
    namespace: cfg.namespace,
    namePrefix: cfg.namePrefix,
    exposure: cfg.exposure,
    ...(cfg.gateway ? { gateway: cfg.gateway } : {}),
    ...(cfg.nodeAddress ? { nodeAddress: cfg.nodeAddress } : {}),
    ...(cfg.forwardAddress ? { forwardAddress: cfg.forwardAddress } : {}),
    image: cfg.runtimeImage,
    command: cfg.runtimeCommand,
    ...(cfg.workingDir ? { workingDir: cfg.workingDir } : {}),
    ...(cfg.natsCaSecret ? { natsCaSecret: cfg.natsCaSecret } : {}),
    readinessTimeoutMs: cfg.readinessTimeoutMs,
    killGraceSeconds: cfg.killGraceSeconds,
    resources: cfg.runtimeResources,
  });
}
