import { describe, expect, it } from "vitest";
import type { V1Pod } from "@kubernetes/client-node";
import { buildPodStatus, podPhase, type ContainerStatusInput } from "./pod-status.ts";

const pod: V1Pod = { metadata: { name: "p", uid: "u1" }, spec: { containers: [{ name: "app" }] } };
const running = (ready: boolean): ContainerStatusInput => ({
  name: "app",
  image: "i",
  restartCount: 0,
  state: { kind: "running", startedAt: "2026-01-01T00:00:00Z", ready, pid: 7 },
});
const exited = (exitCode: number): ContainerStatusInput => ({
  name: "app",
  image: "i",
  restartCount: 0,
  state: {
    kind: "terminated",
    exitCode,
    reason: exitCode === 0 ? "Completed" : "Error",
    startedAt: "2026-01-01T00:00:00Z",
    finishedAt: "2026-01-01T00:00:05Z",
  },
});
const base = {
  pod,
  hostIP: "127.0.0.1",
  podIP: "127.0.4.1",
  startTime: "2026-01-01T00:00:00Z",
  now: "2026-01-01T00:00:10Z",
};
const conds = (s: Record<string, unknown>) =>
  Object.fromEntries((s.conditions as { type: string; status: string }[]).map((c) => [c.type, c.status]));

describe("local kubelet pod status (pure, proves no transport)", () => {
  it("is Pending until a container has started, Running after", () => {
    expect(
      podPhase({
        containers: [
          { name: "app", image: "i", restartCount: 0, state: { kind: "waiting", reason: "ContainerCreating" } },
        ],
      }),
    ).toBe("Pending");
    expect(podPhase({ containers: [running(false)] })).toBe("Running");
  });

  it("is Ready only when every container runs and passed its readiness probe", () => {
    expect(conds(buildPodStatus({ ...base, containers: [running(false)] }))).toMatchObject({
      PodScheduled: "True",
      Initialized: "True",
      ContainersReady: "False",
      Ready: "False",
    });
    expect(conds(buildPodStatus({ ...base, containers: [running(true)] }))).toMatchObject({
      ContainersReady: "True",
      Ready: "True",
    });
  });

  it("reports a terminal Pod as Succeeded only when every container exited 0, and never Ready", () => {
    const ok = buildPodStatus({ ...base, terminal: true, containers: [exited(0)] });
    const bad = buildPodStatus({ ...base, terminal: true, containers: [exited(3)] });
    expect([ok.phase, bad.phase]).toEqual(["Succeeded", "Failed"]);
    expect(conds(bad).Ready).toBe("False");
    const cs = (bad.containerStatuses as { state: { terminated: { exitCode: number } } }[])[0];
    expect(cs?.state.terminated.exitCode).toBe(3);
  });

  it("keeps a condition's lastTransitionTime while its status does not change", () => {
    const first = buildPodStatus({ ...base, containers: [running(true)] });
    const again = buildPodStatus({
      ...base,
      now: "2026-01-01T00:09:00Z",
      pod: { ...pod, status: first as V1Pod["status"] },
      containers: [running(true)],
    });
    const flipped = buildPodStatus({
      ...base,
      now: "2026-01-01T00:09:00Z",
      pod: { ...pod, status: first as V1Pod["status"] },
      containers: [running(false)],
    });
    const ready = (s: Record<string, unknown>) =>
      (s.conditions as { type: string; lastTransitionTime: string }[]).find((c) => c.type === "Ready")
        ?.lastTransitionTime;
    expect(ready(again)).toBe(ready(first));
    expect(ready(flipped)).toBe("2026-01-01T00:09:00Z");
  });
});
