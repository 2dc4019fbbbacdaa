import { describe, expect, it } from "vitest";
import type { DroverEvent, EventOf, RuntimeWorker } from "../../../contracts/index.ts";
import { exampleEvent } from "../../../test/support/example-events.ts";
import { imageDigest, imageRepository, kubernetesWorker, rosterPods } from "./kubernetes-worker.ts";
import { emptyRoster, evolveRoster, type Roster, type RuntimeEvent } from "./runtime-roster.ts";

// Pure: a roster folded from example events, the time an input. Proves no transport.
const V1 = "1".repeat(64);
const V2 = "2".repeat(64);
const NOW = new Date("2026-12-03T20:00:00.000Z");
const rt = <T extends RuntimeEvent["type"]>(type: T, patch: Partial<EventOf<T>["data"]> = {}): RuntimeEvent => {
  const e = exampleEvent(type) as DroverEvent & { data: object };
  return { ...e, data: { ...e.data, ...patch } } as RuntimeEvent;
};
const rosterOf = (...events: [string, RuntimeEvent][]): Roster =>
  events.reduce((r, [id, e], i) => evolveRoster(r, i + 1, id, e), emptyRoster());
const registeredWith = (worker: RuntimeWorker, tenantId = "tenant-a") =>
  rt("runtime.registered", { hostProvider: "kubernetes", tenantId: tenantId as never, worker });

describe("Kubernetes worker versions: the digest of the image a Pod runs (pure)", () => {
  it("reads the digest of a digest reference only; the repository drops tag and digest", () => {
    expect(imageDigest(`reg.local:5000/drover/runtime@sha256:${V1}`)).toBe(V1);
    expect(imageDigest("drover/runtime:dev")).toBeUndefined();
    expect(imageRepository(`reg.local:5000/drover/runtime:v1@sha256:${V1}`)).toBe("reg.local:5000/drover/runtime");
    expect(imageRepository("reg.local:5000/drover/runtime")).toBe("reg.local:5000/drover/runtime");
  });

  it("a tag reference versions no worker: the Pod is not version-filtered", () => {
    expect(
      kubernetesWorker({ image: "drover/runtime:dev", tenantId: "tenant-a", roster: emptyRoster(), now: NOW }),
    ).toBe(undefined);
  });

  it("a new runtime runs the configured image, deployed now, not pinned", () => {
    const image = `drover/runtime@sha256:${V2}`;
    expect(kubernetesWorker({ image, tenantId: "tenant-a", roster: emptyRoster(), now: NOW })).toEqual({
      worker: { version: V2, deployedAt: NOW.toISOString(), pinned: false, image },
    });
  });

  it("a pinned start of the current version is a normal runtime, keeping that version's last deploy time", () => {
    const image = `drover/runtime@sha256:${V2}`;
    const roster = rosterOf([
      "rt-a",
      registeredWith({ version: V2, deployedAt: "2026-12-03T19:00:00.000Z", pinned: false, image }),
    ]);
    expect(kubernetesWorker({ image, version: V2, tenantId: "tenant-a", roster, now: NOW })).toEqual({
      worker: { version: V2, deployedAt: "2026-12-03T19:00:00.000Z", pinned: false, image },
    });
  });

  it("a pinned start of an older version runs the image its registrations recorded, pinned (draining), never another tenant's", () => {
    const old = `reg.local:5000/drover/runtime-v1@sha256:${V1}`;
    const roster = rosterOf(
      [
        "rt-b",
        registeredWith({ version: V1, deployedAt: "2026-12-03T17:00:00.000Z", pinned: false, image: "x" }, "tenant-b"),
      ],
      ["rt-a1", registeredWith({ version: V1, deployedAt: "2026-12-03T18:00:00.000Z", pinned: false, image: old })],
      ["rt-a2", registeredWith({ version: V1, deployedAt: "2026-12-03T17:30:00.000Z", pinned: false, image: "y" })],
    );
    expect(
      kubernetesWorker({ image: `drover/runtime@sha256:${V2}`, version: V1, tenantId: "tenant-a", roster, now: NOW }),
    ).toEqual({ worker: { version: V1, deployedAt: "2026-12-03T18:00:00.000Z", pinned: true, image: old } });
  });

  it("an older version no registration remembers is asked of the current image's repository at that digest", () => {
    expect(
      kubernetesWorker({
        image: `reg.local:5000/drover/runtime:v2@sha256:${V2}`,
        version: V1,
        tenantId: "tenant-a",
        roster: emptyRoster(),
        now: NOW,
      }),
    ).toEqual({
      worker: {
        version: V1,
        deployedAt: NOW.toISOString(),
        pinned: true,
        image: `reg.local:5000/drover/runtime@sha256:${V1}`,
      },
    });
  });

  it("the Pods a drain check may retire: started as a Pod, not ended, not a warm pool member; never a process host", () => {
    const roster = rosterOf(
      ["rt-live", registeredWith({ version: V1, deployedAt: NOW.toISOString(), pinned: false })],
      ["rt-live", rt("runtime.host-started")],
      ["rt-gone", registeredWith({ version: V1, deployedAt: NOW.toISOString(), pinned: false })],
      ["rt-gone", rt("runtime.host-started")],
      ["rt-gone", rt("runtime.fenced")],
      ["rt-bare", registeredWith({ version: V1, deployedAt: NOW.toISOString(), pinned: false })],
      [
        "rt-bare",
        rt("runtime.host-started", {
          hostIncarnation: "pod:0f1e2d3c-0000" as never,
          podUid: undefined,
          podName: undefined,
          namespace: undefined,
          node: undefined,
        }),
      ],
      ["rt-proc", rt("runtime.registered")],
      [
        "rt-proc",
        rt("runtime.host-started", {
          hostIncarnation: "pid:4242:1" as never,
          podUid: undefined,
          podName: undefined,
          namespace: undefined,
          pid: 4242,
        }),
      ],
    );
    expect(rosterPods(roster)).toEqual([
      {
        runtimeInstanceId: "rt-live",
        host: {
          hostIncarnation: exampleEvent("runtime.host-started").data.hostIncarnation,
          podUid: "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0",
          podName: "rt-tenant-a-0001-0123456789ab",
          namespace: "drover",
          node: "node-1",
        },
      },
      // A Pod recorded by its incarnation alone (no name): the kill finds it by the runtime's names.
      { runtimeInstanceId: "rt-bare", host: { hostIncarnation: "pod:0f1e2d3c-0000" } },
    ]);
  });
});
