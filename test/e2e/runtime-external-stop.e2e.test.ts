import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { startControlPlane, type ControlPlane } from "../../platform/control-plane-processes.ts";
import { connectHarness } from "../../platform/nats-auth/server-keys.ts";
import { stopFromOutside } from "../support/external-stop.ts";

const TENANT = "t-xstop";
const TOKEN = "token-external-stop-0001";
const CP = "cp-external-stop";

/**
 * A runtime stopped by someone other than drover (an operator's `kill`, a supervisor's stop: SIGTERM
 * from this test, not from the provisioner), all services real processes on real nats-server and Redis
 * with process hosts. The runtime drains: capacity drops it at its draining beat, the runs it holds
 * finish on it, and once its exit is proven the provisioner records a planned stop (`retired` with
 * `stopped`). Recovery opens no incident: no `suspected` (neither for its closed connection and
 * refused port, nor for the exit), no fence, no recovery plan. Every run completes exactly once.
 */
describe("a runtime stopped from outside drover (SIGTERM) is a planned stop, not an incident (all services real)", () => {
  let cp: ControlPlane;
  beforeAll(async () => {
    const redis = new Redis(inject("redisUrl"), { db: 14 });
    await redis.flushdb();
    redis.disconnect();
    cp = await startControlPlane({
      natsUrl: inject("natsUrl"),
      redisUrl: `${inject("redisUrl")}/14`,
      config: {
        controlPlaneId: CP,
        heartbeatIntervalMs: 250,
        dispatchTimeoutMs: 2000,
        tenants: [
          {
            tenantId: TENANT,
            isolationMode: "dedicated",
            maxRuntimeInstances: 2,
            workersPerInstance: 2,
            maxConcurrentRunsPerInstance: 2,
            localQueueCapacity: 2,
          },
        ],
        tokens: { [TOKEN]: { role: "tenant", tenantId: TENANT } },
      },
    });
  });
  afterAll(async () => {
    await cp?.stop();
  });

  it("drains on it, drops out of capacity at its draining beat, completes every run once, and records a planned stop with no incident", async () => {
    const nc = await connectHarness({ servers: inject("natsUrl") });
    try {
      const plane = { nc, cp, controlPlaneId: CP, redisUrl: `${inject("redisUrl")}/14`, tenant: TENANT, token: TOKEN };
      const { retired } = await stopFromOutside(plane, async (host) => {
        if (!host.pid) throw new Error("no pid for the runtime");
        process.kill(host.pid, "SIGTERM");
      });
      expect(retired.stopped?.proof.kind).toBe("process-exit");
    } finally {
      await nc.close();
    }
  });
});
