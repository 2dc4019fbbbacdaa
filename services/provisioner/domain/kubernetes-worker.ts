import type { RuntimeWorker } from "../../../contracts/index.ts";
import type { Roster } from "./runtime-roster.ts";

/** The digest (hex) an image reference pins (`…@sha256:<hex>`); undefined for a tag reference. */
export function imageDigest(ref: string): string | undefined {
  return /@sha256:([0-9a-f]{64})$/.exec(ref)?.[1];
}

/** The repository of an image reference: without its digest and its tag (`reg:5000/a/b:t` → `reg:5000/a/b`). */
export function imageRepository(ref: string): string {
  const noDigest = ref.replace(/@sha256:[0-9a-f]{64}$/, "");
  const slash = noDigest.lastIndexOf("/");
  const colon = noDigest.lastIndexOf(":");
  return colon > slash ? noDigest.slice(0, colon) : noDigest;
}

export interface KubernetesWorkerInput {
  /** The image the tenant's Pods run now: its `worker.image`, else the provisioner's runtime image. */
  readonly image: string;
  /** The version a scale-out for pinned runs asks for; absent: the current one. */
  readonly version?: string;
  readonly tenantId: string;
  /** Every runtime of the control plane: the registrations say which image ran which version. */
  readonly roster: Roster;
  readonly now: Date;
}

/**
 * The worker a Kubernetes runtime of the tenant registers (docs/worker-versions.md): its version
 * is the digest of the image its Pod runs, so only a digest reference (`…@sha256:<hex>`) versions
 * a worker; a tag reference versions none (the Pod is not version-filtered). Without `version`:
 * the configured image, deployed now. With it: the current image when it has that digest (a normal
 * runtime, last deployed when a runtime of it registered), else the image a registration of the
 * tenant recorded for that version — or the current repository at that digest when the roster no
 * longer holds one — as a pinned (draining) runtime. Pure: the roster and the time are inputs.
 */
export function kubernetesWorker(input: KubernetesWorkerInput): { readonly worker: RuntimeWorker } | undefined {
  const current = imageDigest(input.image);
  if (input.version === undefined) {
    if (current === undefined) return undefined;
    return { worker: { version: current, deployedAt: input.now.toISOString(), pinned: false, image: input.image } };
  }
  const version = input.version;
  const ran = [...input.roster.runtimes.values()]
    .flatMap((r): RuntimeWorker[] => {
      const w = r.worker;
      return w !== undefined && r.tenantId === input.tenantId && w.version === version && w.image ? [w] : [];
    })
    .sort((a, b) => (a.deployedAt < b.deployedAt ? 1 : a.deployedAt > b.deployedAt ? -1 : 0));
  const last = ran[0];
  if (current === input.version)
    return {
      worker: {
        version: current,
        deployedAt: last?.deployedAt ?? input.now.toISOString(),
        pinned: false,
        image: input.image,
      },
    };
  const image = last?.image ?? `${imageRepository(input.image)}@sha256:${input.version}`;
  return {
    worker: { version: input.version, deployedAt: last?.deployedAt ?? input.now.toISOString(), pinned: true, image },
  };
}

/**
 * The runtime Pods of the roster that still run (host started as `pod:<uid>`, not ended, not a warm
 * pool member): any provisioner replica of the control plane may stop a Pod (its kill needs only
 * the incarnation, and the Pod's name and namespace when recorded), unlike a process host, which
 * only the process that spawned it can see.
 */
export function rosterPods(roster: Roster): {
  readonly runtimeInstanceId: string;
  readonly host: {
    readonly hostIncarnation: string;
    readonly podUid?: string;
    readonly podName?: string;
    readonly namespace?: string;
    readonly node?: string;
  };
}[] {
  return [...roster.runtimes.values()].flatMap((s) =>
    s.hostIncarnation?.startsWith("pod:") && !s.endedBy && !s.pool
      ? [
          {
            runtimeInstanceId: s.runtimeInstanceId,
            host: { hostIncarnation: s.hostIncarnation, ...(s.pod ?? {}), ...(s.node ? { node: s.node } : {}) },
          },
        ]
      : [],
  );
}
