import { describe, expect, it } from "vitest";
import type { V1Pod } from "@kubernetes/client-node";
import { goneDecision, podExitCode, readyDecision, stoppedForGood } from "./pod-decisions.ts";

const pod = (
  uid: string,
  patch: { ready?: boolean; phase?: string; deleting?: boolean; terminated?: boolean } = {},
): V1Pod => ({
  metadata: { uid, name: "p", ...(patch.deleting ? { deletionTimestamp: new Date() } : {}) },
  status: {
    phase: patch.phase ?? "Running",
    conditions: [{ type: "Ready", status: patch.ready ? "True" : "False" }],
    containerStatuses: patch.terminated
      ? [
          {
            name: "runtime",
            image: "x",
            imageID: "",
            ready: false,
            restartCount: 0,
            state: { terminated: { exitCode: 137 } },
          },
        ]
      : [],
  },
});

const waiting = (uid: string, reason: string, message: string): V1Pod => ({
  metadata: { uid, name: "p" },
  status: {
    phase: "Pending",
    containerStatuses: [
      {
        name: "runtime",
        image: "x",
        imageID: "",
        ready: false,
        restartCount: 0,
        state: { waiting: { reason, message } },
      },
    ],
  },
});

describe("Pod readiness and UID-gone decisions (pure, prove no transport)", () => {
  it("keeps waiting through CreateContainerConfigError (the real kubelet retries a Secret it cannot read yet), fails at once on an image pull back-off", () => {
    const secret = waiting(
      "u1",
      "CreateContainerConfigError",
      "failed to sync secret cache: timed out waiting for the condition",
    );
    expect(readyDecision("u1", { type: "MODIFIED", obj: secret })).toBeUndefined();
    expect(
      readyDecision("u1", { type: "MODIFIED", obj: waiting("u1", "ImagePullBackOff", "Back-off pulling image") }),
    ).toMatchObject({
      ok: false,
      detail: expect.stringContaining("ImagePullBackOff"),
    });
  });

  it("is Ready only for the exact UID, and fails fast on deletion, replacement, Terminating, a stopped container or a terminal phase", () => {
    expect(readyDecision("u1", { type: "MODIFIED", obj: pod("u1", { ready: true }) })).toMatchObject({ ok: true });
    expect(readyDecision("u1", { type: "MODIFIED", obj: pod("u1") })).toBeUndefined();
    expect(readyDecision("u1", { type: "LISTED", obj: undefined })).toMatchObject({ ok: false });
    expect(readyDecision("u1", { type: "ADDED", obj: pod("u2", { ready: true }) })).toMatchObject({
      ok: false,
      detail: expect.stringContaining("replaced"),
    });
    expect(readyDecision("u1", { type: "MODIFIED", obj: pod("u1", { ready: true, deleting: true }) })).toMatchObject({
      ok: false,
      detail: expect.stringContaining("terminating"),
    });
    expect(readyDecision("u1", { type: "MODIFIED", obj: pod("u1", { terminated: true }) })).toMatchObject({
      ok: false,
      detail: expect.stringContaining("exit 137"),
    });
    expect(readyDecision("u1", { type: "MODIFIED", obj: pod("u1", { phase: "Failed" }) })).toMatchObject({ ok: false });
  });

  it("calls a UID gone when absent, deleted, or when the name holds another UID; never while that UID is Terminating", () => {
    expect(goneDecision("u1", { type: "LISTED", obj: undefined })).toBe("list-absent");
    expect(goneDecision("u1", { type: "DELETED", obj: pod("u1") })).toBe("watch-deleted");
    expect(goneDecision("u1", { type: "ADDED", obj: pod("u2") })).toBe("watch-replaced");
    expect(goneDecision("u1", { type: "LISTED", obj: pod("u2") })).toBe("list-replaced");
    expect(goneDecision("u1", { type: "MODIFIED", obj: pod("u1", { deleting: true }) })).toBeUndefined();
    expect(goneDecision("u1", { type: "DELETED", obj: pod("u2") })).toBeUndefined();
  });

  it("calls a Pod stopped for good only when its kubelet reports it: terminal phase, or restartPolicy Never and every container terminated", () => {
    const withSpec = (p: V1Pod, restartPolicy: string): V1Pod => ({
      ...p,
      spec: { restartPolicy, containers: [{ name: "runtime" }] },
    });
    const ev = (obj: V1Pod) => ({ type: "MODIFIED" as const, obj });
    expect(stoppedForGood("u1", ev(withSpec(pod("u1", { terminated: true }), "Never")))).toBe(
      "every container terminated",
    );
    expect(stoppedForGood("u1", ev(withSpec(pod("u1", { phase: "Failed" }), "Never")))).toBe("phase Failed");
    // Still running, another restart policy, another UID, a deletion or nothing listed: not proven.
    expect(stoppedForGood("u1", ev(withSpec(pod("u1"), "Never")))).toBeUndefined();
    expect(stoppedForGood("u1", ev(withSpec(pod("u1", { terminated: true }), "Always")))).toBeUndefined();
    expect(stoppedForGood("u1", ev(withSpec(pod("u2", { terminated: true }), "Never")))).toBeUndefined();
    expect(
      stoppedForGood("u1", { type: "DELETED", obj: withSpec(pod("u1", { terminated: true }), "Never") }),
    ).toBeUndefined();
    expect(stoppedForGood("u1", { type: "LISTED", obj: undefined })).toBeUndefined();
    // An init container not yet terminated keeps it open.
    const init = withSpec(pod("u1", { terminated: true }), "Never");
    expect(
      stoppedForGood("u1", ev({ ...init, spec: { ...init.spec!, initContainers: [{ name: "setup" }] } })),
    ).toBeUndefined();
  });

  it("gives a Pod's exit code only once every container terminated: the first non-zero, else 0", () => {
    const status = (name: string, terminated?: number) => ({
      name,
      image: "x",
      imageID: "",
      ready: false,
      restartCount: 0,
      state: terminated === undefined ? { running: {} } : { terminated: { exitCode: terminated } },
    });
    const of = (...containerStatuses: ReturnType<typeof status>[]): V1Pod => ({ status: { containerStatuses } });
    expect(podExitCode(of(status("runtime", 0)))).toBe(0);
    expect(podExitCode(of(status("runtime", 143)))).toBe(143);
    expect(podExitCode(of(status("a", 0), status("b", 1)))).toBe(1);
    expect(podExitCode(of(status("a", 0), status("b")))).toBeUndefined();
    expect(podExitCode(of())).toBeUndefined();
    expect(podExitCode(undefined)).toBeUndefined();
  });
});
