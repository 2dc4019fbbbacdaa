import { describe, expect, it } from "vitest";
import { TenantSettings, type DataOf } from "../../../contracts/index.ts";
import { exampleEvent } from "../../../test/support/example-events.ts";
import type { ProvisionerDeps } from "./context.ts";
import { podImageOf, warmMemberServes } from "./host-start.ts";

// Pure decisions of the provisioner's shell (no store, no strategy): proves no transport.
const RUNTIME_IMAGE = "drover/runtime:dev";
const V1 = `drover/runtime@sha256:${"1".repeat(64)}`;
const deps = (image?: string) =>
  ({
    kubernetesImage: RUNTIME_IMAGE,
    tenantSettings: (tenantId: string) =>
      TenantSettings.parse({
        tenantId,
        isolationMode: "dedicated",
        hostProvider: "kubernetes",
        worker: { module: "examples/data-pipeline/worker.mjs", kinds: ["sign"], ...(image ? { image } : {}) },
      }),
  }) as unknown as ProvisionerDeps;
const reg = (patch: Partial<DataOf<"runtime.registered">> = {}): DataOf<"runtime.registered"> => ({
  ...(exampleEvent("runtime.registered").data as DataOf<"runtime.registered">),
  hostProvider: "kubernetes",
  ...patch,
});

describe("the image a runtime Pod runs, and whether a warm member may serve it (docs/worker-versions.md)", () => {
  it("a versioned worker's Pod runs its recorded digest reference and never binds a warm member of the runtime image", () => {
    const r = reg({
      worker: { version: "1".repeat(64), deployedAt: "2026-12-03T20:00:00.000Z", pinned: true, image: V1 },
    });
    expect(podImageOf(deps(), r)).toBe(V1);
    expect(warmMemberServes(deps(), r)).toBe(false);
  });

  it("a tenant's tag worker.image (no version) is still the Pod's image, and no warm member of another image serves it", () => {
    expect(podImageOf(deps("acme/worker:7"), reg())).toBe("acme/worker:7");
    expect(warmMemberServes(deps("acme/worker:7"), reg())).toBe(false);
  });

  it("without a worker image the Pod runs the runtime image, which warm members run too; process hosts have no Pod image", () => {
    expect(podImageOf(deps(), reg())).toBeUndefined();
    expect(warmMemberServes(deps(), reg())).toBe(true);
    expect(warmMemberServes(deps(RUNTIME_IMAGE), reg())).toBe(true);
    expect(podImageOf(deps("acme/worker:7"), reg({ hostProvider: "process" }))).toBeUndefined();
  });
});
