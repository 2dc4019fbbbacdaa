import type { V1Container, V1Pod } from "@kubernetes/client-node";

/** What a container process is started with, or why it cannot be (→ CreateContainerConfigError). */
export type ContainerLaunch =
  | { readonly ok: true; readonly argv: readonly string[]; readonly env: Record<string, string>; readonly cwd: string }
  | { readonly ok: false; readonly message: string };

export interface LaunchContext {
  readonly podIP: string;
  readonly hostIP: string;
  readonly nodeName: string;
  /** Host variables passed through (PATH, HOME…): the process needs them to find its program. */
  readonly baseEnv: Record<string, string>;
  /** Working directory when the container does not set `workingDir`. */
  readonly defaultCwd: string;
  /** Decoded data of the Secrets the container's env refers to (name → key → value), read by the caller. */
  readonly secrets?: ReadonlyMap<string, Readonly<Record<string, string>>>;
}

/** Names of the Secrets a container's env refers to through secretKeyRef (what the caller must read first). */
export function referencedSecrets(container: V1Container): string[] {
  return [
    ...new Set(
      (container.env ?? []).flatMap((e) => (e.valueFrom?.secretKeyRef?.name ? [e.valueFrom.secretKeyRef.name] : [])),
    ),
  ];
}

// Expands $(VAR) from the variables defined so far; $$(VAR) stays literal, as in Kubernetes.
function expand(s: string, vars: Record<string, string>): string {
  return s.replace(/\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)/g, (m, name: string | undefined) =>
    m === "$$" ? "$" : name !== undefined && name in vars ? (vars[name] as string) : m,
  );
}

function fieldValue(pod: V1Pod, path: string, ctx: LaunchContext): string | undefined {
  const md = pod.metadata ?? {};
  const key = /^metadata\.(labels|annotations)\['(.+)'\]$/.exec(path);
  if (key) return (key[1] === "labels" ? md.labels : md.annotations)?.[key[2] as string] ?? "";
  switch (path) {
    case "metadata.name":
      return md.name ?? "";
    case "metadata.namespace":
      return md.namespace ?? "";
    case "metadata.uid":
      return md.uid ?? "";
    case "spec.nodeName":
      return ctx.nodeName;
    case "spec.serviceAccountName":
      return pod.spec?.serviceAccountName ?? "";
    case "status.hostIP":
    case "status.hostIPs":
      return ctx.hostIP;
    case "status.podIP":
    case "status.podIPs":
      return ctx.podIP;
    default:
      return undefined;
  }
}

/**
 * Resolves a container's argv (command + args), environment and working directory. The process
 * gets the host's PATH/HOME, then POD_IP, POD_NAME, POD_NAMESPACE, POD_UID, NODE_NAME and HOSTNAME
 * (so a program knows which loopback address is its own), then the container's `env` (literal
 * values, `fieldRef`s and `secretKeyRef`s from `ctx.secrets`, with $(VAR) expansion). Fails — never guesses — when the container has no
 * `command` (no images are pulled here) or uses an env source this kubelet does not implement.
 */
export function resolveLaunch(pod: V1Pod, container: V1Container, ctx: LaunchContext): ContainerLaunch {
  if (!container.command?.length) {
    return {
      ok: false,
      message: `container ${container.name}: the local kubelet runs spec.containers[].command as a process (images are not pulled); command is empty`,
    };
  }
  if (container.envFrom?.length)
    return { ok: false, message: `container ${container.name}: envFrom is not supported by the local kubelet` };
  const env: Record<string, string> = {
    ...ctx.baseEnv,
    POD_IP: ctx.podIP,
    POD_NAME: pod.metadata?.name ?? "",
    POD_NAMESPACE: pod.metadata?.namespace ?? "",
    POD_UID: pod.metadata?.uid ?? "",
    NODE_NAME: ctx.nodeName,
    HOSTNAME: pod.metadata?.name ?? "",
  };
  for (const e of container.env ?? []) {
    if (e.value !== undefined || !e.valueFrom) {
      env[e.name] = expand(e.value ?? "", env);
      continue;
    }
    const ref = e.valueFrom.secretKeyRef;
    if (ref) {
      const v = ctx.secrets?.get(ref.name ?? "")?.[ref.key];
      if (v !== undefined) env[e.name] = v;
      // Like the kubelet: a missing Secret or key fails the start unless the reference is optional.
      else if (!ref.optional)
        return {
          ok: false,
          message: `container ${container.name}: env ${e.name}: secret ${ref.name} key ${ref.key} not found`,
        };
      continue;
    }
    const path = e.valueFrom.fieldRef?.fieldPath;
    const v = path === undefined ? undefined : fieldValue(pod, path, ctx);
    if (v === undefined)
      return {
        ok: false,
        message: `container ${container.name}: env ${e.name}: only value, secretKeyRef and supported fieldRef sources are implemented by the local kubelet`,
      };
    env[e.name] = v;
  }
  const argv = [...container.command, ...(container.args ?? [])].map((a) => expand(a, env));
  return { ok: true, argv, env, cwd: container.workingDir ?? ctx.defaultCwd };
}
