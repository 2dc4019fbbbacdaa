import { PatchStrategy, setHeaderOptions, type CoreV1Api, type V1Container, type V1Pod } from "@kubernetes/client-node";
import { isApiCode } from "../lib/api-errors.ts";
import type { Logger } from "../lib/log.ts";
import { adoptContainer, spawnContainer, type ContainerExit, type ContainerProcess } from "./container-process.ts";
import { referencedSecrets, resolveLaunch } from "./container-env.ts";
import type { IpPool } from "../lib/ip-pool.ts";
import { buildPodStatus, terminationReason, type ContainerState } from "./pod-status.ts";
import { runReadinessProbe } from "./readiness-probe.ts";
import { readExitCode, removePod, type ContainerRecord } from "./state-store.ts";

export interface WorkerDeps {
  readonly core: CoreV1Api;
  readonly log: Logger;
  readonly stateDir: string;
  readonly nodeName: string;
  readonly hostIP: string;
  readonly ipPool: IpPool;
  readonly baseEnv: Record<string, string>;
  readonly defaultCwd: string;
  /** Called once the Pod is finalized (or gone) and its processes and records are cleaned up. */
  readonly onFinished: (uid: string) => void;
}

type Terminated = Extract<ContainerState, { kind: "terminated" }>;
interface Slot {
  readonly spec: V1Container;
  proc?: ContainerProcess;
  state: ContainerState;
  restartCount: number;
  lastTerminated?: Terminated;
  stopProbe?: () => void;
  restartTimer?: NodeJS.Timeout;
}

// Shorter than the real kubelet's 10 s → 5 min CrashLoopBackOff: this cluster exists for tests.
const backoffMs = (restarts: number): number => Math.min(1000 * 2 ** restarts, 60_000);
const mergePatch = setHeaderOptions("Content-Type", PatchStrategy.MergePatch);

/**
 * Runs one Pod (one UID) on this node: starts each container's command as a process on the
 * Pod's own loopback IP, restarts per restartPolicy, probes readiness, writes the status
 * subresource when it changes, and on deletion sends SIGTERM, SIGKILLs after the grace period and
 * finalizes the Pod with a `gracePeriodSeconds: 0` delete preconditioned on its UID. All work runs
 * in one serial loop per Pod; events only mark it dirty.
 */
export class PodWorker {
  private pod: V1Pod;
  private readonly uid: string;
  private readonly slots: Slot[];
  private podIP: string | undefined;
  private readonly startTime: string;
  private running = false;
  private dirty = false;
  private lastStatus = "";
  private gone = false;
  private finished = false;
  private killAt: number | undefined;
  private killTimer: NodeJS.Timeout | undefined;
  /** Secrets read for the last container start (name → decoded data); the probe's env reuses them. */
  private secrets = new Map<string, Record<string, string>>();

  constructor(
    private readonly deps: WorkerDeps,
    pod: V1Pod,
    records: readonly ContainerRecord[],
  ) {
    this.pod = pod;
    this.uid = pod.metadata?.uid ?? "";
    const st = pod.status?.startTime;
    this.startTime = st ? new Date(st).toISOString() : new Date().toISOString();
    const knownIP = records[0]?.podIP ?? pod.status?.podIP;
    if (knownIP && deps.ipPool.contains(knownIP)) {
      deps.ipPool.reserve(knownIP);
      this.podIP = knownIP;
    }
    this.slots = (pod.spec?.containers ?? []).map((spec) =>
      this.adoptSlot(
        spec,
        records.find((r) => r.container === spec.name),
      ),
    );
    this.kick();
  }

  private adoptSlot(spec: V1Container, rec: ContainerRecord | undefined): Slot {
    const fromStatus = this.pod.status?.containerStatuses?.find((s) => s.name === spec.name)?.restartCount ?? 0;
    const slot: Slot = {
      spec,
      state: { kind: "waiting", reason: "ContainerCreating" },
      restartCount: Math.max(fromStatus, rec?.restartCount ?? 0),
    };
    if (!rec) return slot;
    const proc = adoptContainer(rec);
    if (proc) {
      this.deps.log.info("adopted container process", { pod: this.key(), container: spec.name, pid: rec.pid });
      this.attach(slot, proc);
    } else {
      // Died while no kubelet watched it; the wrapper's exit file (if any) holds the code. Until it
      // is read the state says 137 (killed), which is also the answer when there is no file.
      slot.state = {
        kind: "terminated",
        exitCode: 137,
        reason: "Error",
        message: "exited while the kubelet was down",
        startedAt: rec.startedAt,
        finishedAt: new Date().toISOString(),
      };
      void readExitCode(rec.exitFile).then((code) => {
        if (code !== undefined && slot.state.kind === "terminated")
          slot.state = { ...slot.state, exitCode: code, reason: terminationReason(code) };
        this.kick();
      });
    }
    return slot;
  }

  /** The informer saw a newer version of this Pod. */
  update(pod: V1Pod): void {
    this.pod = pod;
    this.kick();
  }

  /** The Pod object is gone from the API (finalized, or force-deleted by someone else). */
  deleted(): void {
    this.gone = true;
    this.kick();
  }

  /** Stops timers and probes without touching processes (kubelet shutdown: they are adopted later). */
  detach(): void {
    this.finished = true;
    if (this.killTimer) clearTimeout(this.killTimer);
    for (const s of this.slots) {
      s.stopProbe?.();
      if (s.restartTimer) clearTimeout(s.restartTimer);
    }
  }

  private key(): string {
    return `${this.pod.metadata?.namespace}/${this.pod.metadata?.name}`;
  }

  private kick(): void {
    this.dirty = true;
    if (!this.running) void this.loop();
  }

  private async loop(): Promise<void> {
    this.running = true;
    while (this.dirty && !this.finished) {
      this.dirty = false;
      try {
        await this.sync();
      } catch (err) {
        this.deps.log.warn("pod sync failed; retrying", { pod: this.key(), err });
        setTimeout(() => this.kick(), 1000);
      }
    }
    this.running = false;
  }

  private async sync(): Promise<void> {
    if (this.gone || this.pod.metadata?.deletionTimestamp) return this.terminate();
    if (!this.podIP) this.podIP = this.deps.ipPool.allocate();
    const policy = this.pod.spec?.restartPolicy ?? "Always";
    for (const slot of this.slots) {
      if (slot.proc || slot.restartTimer) continue;
      if (slot.state.kind === "waiting" && slot.state.reason === "ContainerCreating") await this.start(slot);
      else if (
        slot.state.kind === "terminated" &&
        (policy === "Always" || (policy === "OnFailure" && slot.state.exitCode !== 0))
      )
        this.scheduleRestart(slot);
    }
    await this.writeStatus(this.isTerminal(policy));
  }

  private isTerminal(policy: string): boolean {
    return (
      policy !== "Always" &&
      this.slots.every(
        (s) =>
          !s.proc && !s.restartTimer && s.state.kind === "terminated" && (policy === "Never" || s.state.exitCode === 0),
      )
    );
  }

  private async start(slot: Slot): Promise<void> {
    await this.readSecrets(slot.spec);
    const launch = resolveLaunch(this.pod, slot.spec, {
      podIP: this.podIP ?? "",
      hostIP: this.deps.hostIP,
      nodeName: this.deps.nodeName,
      baseEnv: this.deps.baseEnv,
      defaultCwd: this.deps.defaultCwd,
      secrets: this.secrets,
    });
    if (!launch.ok) {
      slot.state = { kind: "waiting", reason: "CreateContainerConfigError", message: launch.message };
      // Like the kubelet, retry: the Secret may be created after the Pod.
      slot.restartTimer = setTimeout(() => {
        slot.restartTimer = undefined;
        slot.state = { kind: "waiting", reason: "ContainerCreating" };
        this.kick();
      }, 1000);
      return;
    }
    const md = this.pod.metadata ?? {};
    const proc = await spawnContainer(
      this.deps.stateDir,
      {
        podUid: this.uid,
        namespace: md.namespace ?? "",
        podName: md.name ?? "",
        container: slot.spec.name,
        podIP: this.podIP ?? "",
        restartCount: slot.restartCount,
      },
      launch.argv,
      launch.env,
      launch.cwd,
    );
    this.deps.log.info("started container", {
      pod: this.key(),
      container: slot.spec.name,
      pid: proc.record.pid,
      ip: this.podIP,
    });
    this.attach(slot, proc);
  }

  // Reads each Secret the container's env refers to from the Pod's namespace; a missing one is left
  // out, so resolveLaunch reports it (CreateContainerConfigError) exactly as the kubelet does.
  private async readSecrets(container: V1Container): Promise<void> {
    const namespace = this.pod.metadata?.namespace ?? "";
    for (const name of referencedSecrets(container)) {
      try {
        const s = await this.deps.core.readNamespacedSecret({ name, namespace });
        const data: Record<string, string> = {};
        for (const [k, v] of Object.entries(s.data ?? {})) data[k] = Buffer.from(v, "base64").toString("utf8");
        this.secrets.set(name, data);
      } catch (err) {
        if (!isApiCode(err, 404)) throw err;
        this.secrets.delete(name);
      }
    }
  }

  private attach(slot: Slot, proc: ContainerProcess): void {
    slot.proc = proc;
    const probe = slot.spec.readinessProbe;
    slot.state = { kind: "running", startedAt: proc.record.startedAt, ready: !probe, pid: proc.record.pid };
    if (probe) {
      const launch = resolveLaunch(this.pod, slot.spec, {
        podIP: this.podIP ?? "",
        hostIP: this.deps.hostIP,
        nodeName: this.deps.nodeName,
        baseEnv: this.deps.baseEnv,
        defaultCwd: this.deps.defaultCwd,
        secrets: this.secrets,
      });
      slot.stopProbe = runReadinessProbe(
        probe,
        slot.spec,
        this.podIP ?? "",
        launch.ok ? launch.env : {},
        launch.ok ? launch.cwd : this.deps.defaultCwd,
        (ready) => {
          if (slot.proc === proc && slot.state.kind === "running") {
            slot.state = { ...slot.state, ready };
            this.kick();
          }
        },
      );
    }
    void proc.exited.then((exit) => this.onExit(slot, proc, exit));
  }

  private onExit(slot: Slot, proc: ContainerProcess, exit: ContainerExit): void {
    if (slot.proc !== proc) return;
    slot.stopProbe?.();
    slot.proc = undefined;
    slot.state = {
      kind: "terminated",
      exitCode: exit.exitCode,
      reason: terminationReason(exit.exitCode),
      startedAt: proc.record.startedAt,
      finishedAt: exit.finishedAt,
      pid: proc.record.pid,
      ...(exit.signal ? { signal: exit.signal } : {}),
      ...(exit.codeKnown ? {} : { message: "the process group was killed before its exit code could be recorded" }),
    };
    this.deps.log.info("container exited", { pod: this.key(), container: slot.spec.name, exitCode: exit.exitCode });
    this.kick();
  }

  private scheduleRestart(slot: Slot): void {
    const last = slot.state as Terminated;
    const ranMs = Date.parse(last.finishedAt) - Date.parse(last.startedAt);
    const delay = ranMs > 60_000 ? 0 : backoffMs(slot.restartCount);
    slot.lastTerminated = last;
    slot.state = {
      kind: "waiting",
      reason: "CrashLoopBackOff",
      message: `back-off ${Math.round(delay / 1000)}s restarting failed container=${slot.spec.name}`,
    };
    slot.restartTimer = setTimeout(() => {
      slot.restartTimer = undefined;
      slot.restartCount++;
      slot.state = { kind: "waiting", reason: "ContainerCreating" };
      this.kick();
    }, delay);
  }

  private async writeStatus(terminal: boolean): Promise<void> {
    const md = this.pod.metadata ?? {};
    const status = buildPodStatus({
      pod: this.pod,
      hostIP: this.deps.hostIP,
      ...(this.podIP ? { podIP: this.podIP } : {}),
      startTime: this.startTime,
      now: new Date().toISOString(),
      terminal,
      containers: this.slots.map((s) => ({
        name: s.spec.name,
        image: s.spec.image ?? "",
        state: s.state,
        restartCount: s.restartCount,
        ...(s.lastTerminated ? { lastTerminated: s.lastTerminated } : {}),
      })),
    });
    const text = JSON.stringify(status);
    if (text === this.lastStatus) return;
    // metadata.uid in a patch is a precondition: never write this Pod's status onto a namesake.
    await this.deps.core.patchNamespacedPodStatus(
      { name: md.name ?? "", namespace: md.namespace ?? "", body: { metadata: { uid: this.uid }, status } },
      mergePatch,
    );
    this.lastStatus = text;
  }

  private async terminate(): Promise<void> {
    for (const s of this.slots) {
      if (s.restartTimer) {
        clearTimeout(s.restartTimer);
        s.restartTimer = undefined;
      }
    }
    const live = this.slots.filter((s) => s.proc);
    if (live.length > 0) {
      const grace = this.gone
        ? (this.pod.spec?.terminationGracePeriodSeconds ?? 30)
        : (this.pod.metadata?.deletionGracePeriodSeconds ?? 30);
      const at = Date.now() + grace * 1000;
      if (this.killAt === undefined) {
        this.deps.log.info("stopping pod", { pod: this.key(), graceSeconds: grace });
        for (const s of live) s.proc?.signal("SIGTERM");
      }
      if (this.killAt === undefined || at < this.killAt) {
        this.killAt = at;
        if (this.killTimer) clearTimeout(this.killTimer);
        this.killTimer = setTimeout(
          () => {
            for (const s of this.slots) s.proc?.signal("SIGKILL");
          },
          Math.max(0, at - Date.now()),
        );
      }
      return; // each exit kicks the loop again
    }
    if (this.killTimer) clearTimeout(this.killTimer);
    if (!this.gone) {
      const md = this.pod.metadata ?? {};
      await this.writeStatus(true).catch((err: unknown) => {
        if (!isApiCode(err, 404, 409)) throw err;
      });
      try {
        await this.deps.core.deleteNamespacedPod({
          name: md.name ?? "",
          namespace: md.namespace ?? "",
          gracePeriodSeconds: 0,
          body: { gracePeriodSeconds: 0, preconditions: { uid: this.uid } },
        });
      } catch (err) {
        // 404: already gone; 409: the name now belongs to a new Pod, which is not ours to delete.
        if (!isApiCode(err, 404, 409)) throw err;
      }
    }
    for (const s of this.slots) s.stopProbe?.();
    await removePod(this.deps.stateDir, this.uid);
    if (this.podIP) this.deps.ipPool.release(this.podIP);
    this.finished = true;
    this.deps.log.info("pod finalized", { pod: this.key(), uid: this.uid });
    this.deps.onFinished(this.uid);
  }
}
