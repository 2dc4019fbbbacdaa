import type { V1Pod } from "@kubernetes/client-node";

/**
 * Pure construction of a Pod's `status` (as written to the status subresource) from what the
 * kubelet knows about its containers. No IO, no clock: `now` comes in.
 */

export type ContainerState =
  | { readonly kind: "waiting"; readonly reason: string; readonly message?: string }
  | { readonly kind: "running"; readonly startedAt: string; readonly ready: boolean; readonly pid: number }
  | {
      readonly kind: "terminated";
      readonly exitCode: number;
      readonly signal?: string;
      readonly reason: string;
      readonly message?: string;
      readonly startedAt: string;
      readonly finishedAt: string;
      readonly pid?: number;
    };

export interface ContainerStatusInput {
  readonly name: string;
  readonly image: string;
  readonly state: ContainerState;
  readonly restartCount: number;
  readonly lastTerminated?: Extract<ContainerState, { kind: "terminated" }>;
}

export interface PodStatusInput {
  readonly pod: V1Pod;
  readonly hostIP: string;
  readonly podIP?: string;
  readonly startTime: string;
  readonly containers: readonly ContainerStatusInput[];
  readonly now: string;
  /** Set when the kubelet has decided the Pod is over (all containers done, no restart coming). */
  readonly terminal?: boolean;
}

interface Condition {
  type: string;
  status: "True" | "False";
  reason?: string;
  message?: string;
  lastTransitionTime: string;
  lastProbeTime: null;
}

// metav1.Time has second precision: format like the server does, so a status read back compares equal.
const seconds = (t: string | Date): string => new Date(t).toISOString().replace(/\.\d{3}Z$/, "Z");

/** Kubernetes' names for the end of a container: 0 → Completed, else Error. */
export function terminationReason(exitCode: number): string {
  return exitCode === 0 ? "Completed" : "Error";
}

function stateJson(s: ContainerState): Record<string, unknown> {
  switch (s.kind) {
    case "waiting":
      return { waiting: { reason: s.reason, ...(s.message ? { message: s.message } : {}) } };
    case "running":
      return { running: { startedAt: s.startedAt } };
    case "terminated":
      return {
        terminated: {
          exitCode: s.exitCode,
          reason: s.reason,
          startedAt: s.startedAt,
          finishedAt: s.finishedAt,
          ...(s.message ? { message: s.message } : {}),
          ...(s.signal ? { signal: SIGNAL_NUMBERS[s.signal] ?? 0 } : {}),
          ...(s.pid !== undefined ? { containerID: `local://${s.pid}` } : {}),
        },
      };
    default: {
      const never: never = s;
      throw new Error(`unknown state ${JSON.stringify(never)}`);
    }
  }
}
const SIGNAL_NUMBERS: Record<string, number> = { SIGHUP: 1, SIGINT: 2, SIGKILL: 9, SIGTERM: 15 };

/** Succeeded when every container exited 0, Failed otherwise. */
export function terminalPhase(containers: readonly ContainerStatusInput[]): "Succeeded" | "Failed" {
  return containers.every((c) => c.state.kind === "terminated" && c.state.exitCode === 0) ? "Succeeded" : "Failed";
}

/** The Pod phase: Pending until a container has started, Running while any runs or will restart. */
export function podPhase(input: Pick<PodStatusInput, "containers" | "terminal">): string {
  if (input.terminal) return terminalPhase(input.containers);
  const started = input.containers.some((c) => c.state.kind !== "waiting" || c.restartCount > 0);
  return started ? "Running" : "Pending";
}

/**
 * Builds the status: phase, the four standard conditions (lastTransitionTime kept from the Pod's
 * current status while a condition's value does not change), podIP/podIPs, hostIP/hostIPs,
 * startTime and one containerStatus per spec container in spec order.
 */
export function buildPodStatus(input: PodStatusInput): Record<string, unknown> {
  const { pod } = input;
  const now = seconds(input.now);
  const phase = podPhase(input);
  const previous = new Map((pod.status?.conditions ?? []).map((c) => [c.type, c]));
  const cond = (type: string, ok: boolean, reason?: string, message?: string): Condition => {
    const status = ok ? "True" : "False";
    const prev = previous.get(type);
    const since = prev && prev.status === status && prev.lastTransitionTime ? seconds(prev.lastTransitionTime) : now;
    return {
      type,
      status,
      ...(reason ? { reason } : {}),
      ...(message ? { message } : {}),
      lastTransitionTime: since,
      lastProbeTime: null,
    };
  };
  const unready = input.containers.filter((c) => !(c.state.kind === "running" && c.state.ready)).map((c) => c.name);
  const gates = (pod.spec?.readinessGates ?? []).map((g) => g.conditionType);
  const gatesOk = gates.every((g) => previous.get(g)?.status === "True");
  const terminal = phase === "Succeeded" || phase === "Failed";
  const containersReady = !terminal && unready.length === 0;
  const notReadyReason = terminal ? "PodCompleted" : "ContainersNotReady";
  const notReadyMsg = terminal ? undefined : `containers with unready status: [${unready.join(" ")}]`;
  const conditions = [
    cond("PodScheduled", true),
    cond("Initialized", true),
    containersReady ? cond("ContainersReady", true) : cond("ContainersReady", false, notReadyReason, notReadyMsg),
    containersReady && gatesOk
      ? cond("Ready", true)
      : cond(
          "Ready",
          false,
          containersReady ? "ReadinessGatesNotReady" : notReadyReason,
          containersReady ? "readiness gates not ready" : notReadyMsg,
        ),
  ];
  return {
    phase,
    conditions,
    hostIP: input.hostIP,
    hostIPs: [{ ip: input.hostIP }],
    ...(input.podIP ? { podIP: input.podIP, podIPs: [{ ip: input.podIP }] } : {}),
    startTime: input.startTime,
    containerStatuses: input.containers.map((c) => ({
      name: c.name,
      image: c.image,
      imageID: "",
      ...(c.state.kind === "running" ? { containerID: `local://${c.state.pid}` } : {}),
      ready: c.state.kind === "running" && c.state.ready,
      started: c.state.kind === "running",
      restartCount: c.restartCount,
      state: stateJson(c.state),
      lastState: c.lastTerminated ? stateJson(c.lastTerminated) : {},
    })),
  };
}
