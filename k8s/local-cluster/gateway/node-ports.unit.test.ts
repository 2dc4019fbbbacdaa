import { describe, expect, it } from "vitest";
import type { V1Node, V1Service } from "@kubernetes/client-node";
import { nodePortPlan } from "./node-ports.ts";

const node = (name: string, ip: string): V1Node => ({
  metadata: { name },
  status: {
    addresses: [
      { type: "InternalIP", address: ip },
      { type: "Hostname", address: name },
    ],
  },
});
const svc = (
  name: string,
  type: string,
  ports: { port: number; nodePort?: number; protocol?: string }[],
  deleting = false,
): V1Service => ({
  metadata: { name, namespace: "rt", ...(deleting ? { deletionTimestamp: new Date(0) } : {}) },
  spec: { type, ports },
});

describe("local node-port proxy plan (pure, proves no transport)", () => {
  it("opens every TCP node port of every NodePort Service on every Node InternalIP, and nothing for other Services", () => {
    const plan = nodePortPlan(
      [
        svc("a", "NodePort", [
          { port: 8080, nodePort: 30001 },
          { port: 53, nodePort: 30002, protocol: "UDP" },
        ]),
        svc("b", "ClusterIP", [{ port: 8080 }]),
        svc("c", "NodePort", [{ port: 9090 }]), // not allocated (yet)
        svc("d", "NodePort", [{ port: 9090, nodePort: 30004 }], true),
      ],
      [node("n0", "127.0.4.254"), node("n1", "127.0.5.254")],
    );
    expect([...plan.keys()].sort()).toEqual(["127.0.4.254:30001", "127.0.5.254:30001"]);
    expect(plan.get("127.0.4.254:30001")).toEqual({
      address: "127.0.4.254",
      nodePort: 30001,
      namespace: "rt",
      service: "a",
      port: 8080,
    });
    expect(nodePortPlan([svc("a", "NodePort", [{ port: 8080, nodePort: 30001 }])], []).size).toBe(0);
  });
});
