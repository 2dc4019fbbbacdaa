import { createHash } from "node:crypto";
import { createServer, type Server } from "node:net";
import { jetstream } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { DroverConfig } from "../../contracts/index.ts";
import { DISCONNECT_ADVISORY, watchDisconnects, type Disconnect } from "../../platform/nats-auth/disconnects.ts";
import { KICKER } from "../../platform/nats-auth/rights.ts";
import { RecoveryState, startRecovery, type RecoveryService } from "../../services/recovery/index.ts";
import { runtimeRef } from "../../streams/index.ts";
import { uniqueName } from "../support/isolation.ts";
import { authFixture, type AuthFixture } from "../support/nats-auth-fixture.ts";
import { readyProcessRuntime, writer } from "../support/recovery-fixture.ts";
import { eventually } from "../support/streams.ts";

/**
 * A lost connection as a health signal (real nats-server with authentication on, auth callout, the
 * kicker in the system account, real TCP listeners as command endpoints): the server's advisory that
 * a runtime's NATS connection closed, then one refused connect to its command endpoint, suspects it
 * (`connection-lost`) within a second; a closed connection whose endpoint still accepts (a
 * reconnect, a NATS restart) suspects nothing, and no DROVER identity can forge the advisory.
 */
const CP = "cp-lost";
// A 30 s staleness bound: nothing in this test is suspected for silence.
const config = DroverConfig.parse({ controlPlaneId: CP, heartbeatIntervalMs: 10_000 });

const listen = async (): Promise<{ server: Server; endpoint: string }> => {
  const server = createServer((s) => s.destroy());
  await new Promise<void>((ok) => server.listen(0, "127.0.0.1", ok));
  const port = (server.address() as { port: number }).port;
  return { server, endpoint: `http://127.0.0.1:${port}` };
};

describe("health: a runtime whose NATS connection closed and whose command endpoint refuses is suspected at once (boundary: nats-server disconnect advisory + TCP)", () => {
  let fx: AuthFixture, service: RecoveryService, kicker: NatsConnection;
  const heard: Disconnect[] = [];
  const servers: Server[] = [];
  beforeAll(async () => {
    fx = await authFixture(inject("natsUrl"), 600_000);
    kicker = await fx.as(KICKER);
    watchDisconnects(kicker, (d) => void heard.push(d));
  });
  afterAll(async () => {
    await service?.stop();
    for (const s of servers) s.close();
    await fx.close();
  });

  const suspicions = async (rt: string) =>
    (await fx.store.read(runtimeRef(rt))).events.flatMap((e) =>
      e.event.type === "runtime.suspected" ? [e.event.data.reason] : [],
    );

  it("suspects the dead one (connection closed, endpoint refused) with connection-lost, not the one whose endpoint still accepts", async () => {
    const dead = uniqueName("rt"),
      alive = uniqueName("rt");
    const ends = new Map<string, { server: Server; endpoint: string }>();
    for (const [i, rt] of [dead, alive].entries()) {
      const l = await listen();
      servers.push(l.server);
      ends.set(rt, l);
      await readyProcessRuntime(fx.store, {
        controlPlaneId: CP,
        rt,
        pid: 990_001 + i,
        incarnation: `pid:${990_001 + i}:1`,
        tenantId: "acme",
        endpoint: l.endpoint,
      });
    }
    const conns = new Map([
      [dead, await fx.asRuntime(dead)],
      [alive, await fx.asRuntime(alive)],
    ]);
    service = await startRecovery({
      js: jetstream(fx.f.nc),
      config,
      layout: fx.f.layout,
      store: fx.store,
      state: new RecoveryState(fx.f.layout.eventPrefix, () => undefined),
      env: { ...writer("test"), writer: { service: "recovery", instanceId: "recovery-lost" } },
      // Suspicion only: no host strategy, so no fence. Recovery leaves the runtime suspected; before, its
      // pass asked a fence that returned at once for another pass, spun in microtasks and starved this
      // process's event loop (this test's reads timed out).
      hosts: () => undefined,
      sha256: (x) => createHash("sha256").update(x).digest("hex"),
      log: pino({ level: process.env.TEST_LOG ?? "silent" }),
      disconnects: (cb) => watchDisconnects(kicker, cb),
      tickMs: 50,
    });
    await service.ready;

    // The dead one: its listener and its NATS connection end together (what a process death does).
    await new Promise<void>((ok) => ends.get(dead)!.server.close(() => ok()));
    const t0 = Date.now();
    await conns.get(dead)!.close();
    // The other only loses its NATS connection (a reconnect, a NATS restart): its endpoint accepts.
    await conns.get(alive)!.close();
    const reasons = await eventually(
      "the dead runtime suspected",
      async () => {
        const r = await suspicions(dead);
        return r.length ? r : undefined;
      },
      10_000,
    );
    const ms = Date.now() - t0;
    expect(reasons).toHaveLength(1);
    expect(reasons[0]!.code).toBe("connection-lost");
    expect(reasons[0]!.detail).toContain(`${ends.get(dead)!.endpoint} refused a TCP connection`);
    expect(ms).toBeLessThan(2_000);
    expect(heard.map((d) => d.user)).toEqual(expect.arrayContaining([dead, alive]));
    // A second and more later, the runtime whose endpoint accepts is still not suspected.
    await new Promise((r) => setTimeout(r, 1_500));
    expect(await suspicions(alive)).toEqual([]);
  });

  it("no DROVER identity can forge the advisory: a runtime's or a service's publish to its subject is refused or never reaches the system account", async () => {
    const rt = uniqueName("rt");
    await fx.register(rt, "acme");
    const forger = await fx.asRuntime(rt);
    const before = heard.length;
    const fake = JSON.stringify({
      type: "io.nats.server.advisory.v1.client_disconnect",
      client: { user: "rt-victim", acc: "DROVER" },
      reason: "forged",
    });
    for (const nc of [forger, await fx.as("recovery"), await fx.as("provisioner")]) {
      try {
        nc.publish(DISCONNECT_ADVISORY, fake);
        await nc.flush();
      } catch {
        // refused by its permissions: also a pass
      }
    }
    await new Promise((r) => setTimeout(r, 500));
    expect(heard.slice(before).filter((d) => d.user === "rt-victim")).toEqual([]);
    await forger.close();
  });
});
