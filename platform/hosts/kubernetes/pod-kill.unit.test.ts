import { KubeConfig, type CoreV1Api } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { killPodExact } from "./pod-kill.ts";

describe("killPodExact (in-memory fake API server calls: proves no transport)", () => {
  it("with exit evidence, sends the UID-preconditioned grace-0 delete without waiting for the Pod read's answer", async () => {
    const calls: string[] = [];
    let sent = () => undefined as void;
    const deleteSent = new Promise<void>((r) => (sent = r));
    const core = {
      // The read answers once the delete was sent (or after 1 s): the Pod is gone by then.
      listNamespacedPod: async () => {
        calls.push("list");
        await Promise.race([deleteSent, new Promise((r) => setTimeout(r, 1_000))]);
        return { items: [], metadata: { resourceVersion: "7" } };
      },
      deleteNamespacedPod: async (req: { body: { gracePeriodSeconds?: number; preconditions?: { uid?: string } } }) => {
        calls.push(`delete grace ${req.body.gracePeriodSeconds} uid ${req.body.preconditions?.uid}`);
        sent();
        return {};
      },
    } as unknown as CoreV1Api;
    const r = await killPodExact(new KubeConfig(), core, "ns", "rt-a", "uid-1", 30, 5_000, "its connection was lost");
    expect(r.outcome).toBe("killed");
    // Before, the delete went out only after the read's answer (here: a Pod already gone, so none at all).
    expect(calls).toEqual(["delete grace 0 uid uid-1", "list"]);
  });
});
