import { claimableMembers, RosterView } from "../../services/provisioner/index.ts";
import { uniqueName } from "./isolation.ts";
import type { ProvisionerFixture } from "./provisioner-fixture.ts";
import { eventually } from "./streams.ts";

/** Ready pool members that `strategy` started (other tests' pools share the stream layout). */
export const readyMembers = async (f: ProvisionerFixture, n: number, strategy: { canBind(id: string): boolean }) =>
  eventually(
    `${n} ready pool members`,
    async () => {
      const all = claimableMembers(await new RosterView(f.store, f.streams.layout).current(), "process");
      const m = all.filter((x) => strategy.canBind(x.runtimeInstanceId));
      return m.length >= n ? m : undefined;
    },
    90_000,
  );

/** A fresh runtime id for `tenantId`, of the shape recovery's replacements have. */
export const replacementId = (tenantId: string) =>
  `rt-${tenantId}-${uniqueName("x")
    .replace(/[^a-z0-9]/g, "")
    .slice(-12)
    .padStart(12, "0")}`;

/** What a test hands the pool's claim: a dedicated process runtime's registration for `tenantId`. */
export const claimStart = (controlPlaneId: string, tenantId: string, runtimeInstanceId: string) => ({
  runtimeInstanceId,
  registration: {
    controlPlaneId,
    tenantId,
    isolationMode: "dedicated",
    allowSharedFallback: false,
    pool: "default",
    hostProvider: "process",
    transport: "http",
    sizing: { workers: 1, maxConcurrentRuns: 1, localQueueCapacity: 2, maxWorkersPerRun: 1 },
    requiredLayers: ["resource", "host", "endpoint", "command"],
    scaleOutRequestId: uniqueName("so"),
  },
  origin: { instanceId: "test", correlationId: "c", causationId: "c", tenantId },
});
