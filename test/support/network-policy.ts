import type { V1Container, V1LabelSelector, V1NetworkPolicy } from "@kubernetes/client-node";

/** A Pod as NetworkPolicy sees it: where it is, its labels, its containers' ports. */
export interface PolicyPod {
  readonly namespace: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly containers?: readonly V1Container[];
}

/** `matchLabels` only: a selector using anything else is refused, never guessed at. */
function selects(selector: V1LabelSelector | undefined, labels: Readonly<Record<string, string>>): boolean {
  if (selector?.matchExpressions?.length) throw new Error("matchExpressions are not evaluated here");
  return Object.entries(selector?.matchLabels ?? {}).every(([k, v]) => labels[k] === v);
}

function portMatches(rulePort: number | string | undefined, protocol: string, port: number, dest: PolicyPod): boolean {
  if (protocol !== "TCP") return false;
  if (rulePort === undefined) return true;
  if (typeof rulePort === "number") return rulePort === port;
  return (dest.containers ?? []).some((c) =>
    (c.ports ?? []).some((p) => p.name === rulePort && p.containerPort === port),
  );
}

/**
 * Whether Kubernetes NetworkPolicy semantics admit a TCP connection from `src` to `dest` on `port`
 * (namespace labels by name; every namespace has `kubernetes.io/metadata.name`). Pure: it evaluates
 * the objects as the API defines them (a Pod selected by no Ingress policy is open; otherwise the
 * union of the selecting policies' rules), not any network plugin; `ipBlock` peers match no Pod.
 */
export function admits(
  policies: readonly V1NetworkPolicy[],
  namespaces: Readonly<Record<string, Readonly<Record<string, string>>>>,
  src: PolicyPod,
  dest: PolicyPod,
  port: number,
): boolean {
  const nsLabels = (ns: string) => ({ ...namespaces[ns], "kubernetes.io/metadata.name": ns });
  const selecting = policies.filter(
    (p) =>
      p.metadata?.namespace === dest.namespace &&
      selects(p.spec?.podSelector, dest.labels) &&
      (p.spec?.policyTypes ?? ["Ingress"]).includes("Ingress"),
  );
  if (selecting.length === 0) return true;
  return selecting.some((p) =>
    (p.spec?.ingress ?? []).some((rule) => {
      const fromOk =
        !rule._from?.length ||
        rule._from.some((peer) => {
          if (peer.ipBlock) return false;
          const nsOk = peer.namespaceSelector
            ? selects(peer.namespaceSelector, nsLabels(src.namespace))
            : src.namespace === dest.namespace;
          return nsOk && (!peer.podSelector || selects(peer.podSelector, src.labels));
        });
      const portOk =
        !rule.ports?.length ||
        rule.ports.some((rp) => portMatches(rp.port as number | string | undefined, rp.protocol ?? "TCP", port, dest));
      return fromOk && portOk;
    }),
  );
}
