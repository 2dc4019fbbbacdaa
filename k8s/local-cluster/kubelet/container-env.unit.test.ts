import { describe, expect, it } from "vitest";
import type { V1Pod } from "@kubernetes/client-node";
import { referencedSecrets, resolveLaunch } from "./container-env.ts";

const ctx = { podIP: "127.0.4.9", hostIP: "127.0.0.1", nodeName: "n1", baseEnv: { PATH: "/bin" }, defaultCwd: "/repo" };
const pod: V1Pod = {
  metadata: { name: "p", namespace: "ns", uid: "u1", labels: { tier: "rt" } },
  spec: { containers: [] },
};

describe("local kubelet container launch (pure, proves no transport)", () => {
  it("gives the process its Pod's identity and loopback IP, the Pod's env with fieldRefs and $(VAR) expansion", () => {
    const l = resolveLaunch(
      pod,
      {
        name: "c",
        command: ["node", "app.js"],
        args: ["--port=$(PORT)", "$$(PORT)"],
        env: [
          { name: "PORT", value: "8080" },
          { name: "ADDR", value: "$(POD_IP):$(PORT)" },
          { name: "TIER", valueFrom: { fieldRef: { fieldPath: "metadata.labels['tier']" } } },
          { name: "MY_IP", valueFrom: { fieldRef: { fieldPath: "status.podIP" } } },
        ],
      },
      ctx,
    );
    expect(l).toMatchObject({
      ok: true,
      argv: ["node", "app.js", "--port=8080", "$(PORT)"],
      cwd: "/repo",
      env: {
        PATH: "/bin",
        POD_IP: "127.0.4.9",
        POD_NAME: "p",
        POD_NAMESPACE: "ns",
        POD_UID: "u1",
        NODE_NAME: "n1",
        HOSTNAME: "p",
        PORT: "8080",
        ADDR: "127.0.4.9:8080",
        TIER: "rt",
        MY_IP: "127.0.4.9",
      },
    });
  });

  it("refuses, rather than guesses, a container without command or with an env source it does not implement", () => {
    expect(resolveLaunch(pod, { name: "c", image: "x" }, ctx).ok).toBe(false);
    expect(
      resolveLaunch(
        pod,
        { name: "c", command: ["x"], env: [{ name: "S", valueFrom: { configMapKeyRef: { name: "s", key: "k" } } }] },
        ctx,
      ).ok,
    ).toBe(false);
  });

  it("resolves secretKeyRef from the Secrets the worker read, and fails a start whose Secret or key is missing unless optional", () => {
    const env = [{ name: "TOKEN", valueFrom: { secretKeyRef: { name: "s", key: "token" } } }];
    const withSecret = { ...ctx, secrets: new Map([["s", { token: "t0" }]]) };
    expect(referencedSecrets({ name: "c", env })).toEqual(["s"]);
    expect(resolveLaunch(pod, { name: "c", command: ["x"], env }, withSecret)).toMatchObject({
      ok: true,
      env: { TOKEN: "t0" },
    });
    expect(resolveLaunch(pod, { name: "c", command: ["x"], env }, ctx)).toMatchObject({
      ok: false,
      message: expect.stringContaining("secret s key token not found"),
    });
    const optional = [{ name: "TOKEN", valueFrom: { secretKeyRef: { name: "s", key: "other", optional: true } } }];
    const l = resolveLaunch(pod, { name: "c", command: ["x"], env: optional }, withSecret);
    expect(l.ok && "TOKEN" in l.env).toBe(false);
  });
});
