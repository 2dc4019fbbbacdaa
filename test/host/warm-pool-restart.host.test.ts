import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import type { DroverEvent } from "../../contracts/index.ts";
import { createProcessStrategy } from "../../platform/hosts/process-strategy.ts";
import { incarnationState, parseProcessIncarnation } from "../../platform/hosts/proc-table.ts";
import { RosterView, type RuntimeSummary } from "../../services/provisioner/index.ts";
import { uniqueName } from "../support/isolation.ts";
import { provisionerFixture, type ProvisionerFixture } from "../support/provisioner-fixture.ts";
import { exitedProcess, provisionerProcesses } from "../support/provisioner-process.ts";
import { eventually } from "../support/streams.ts";

// Real provisioner processes keeping a warm pool of 2 process hosts, real pooled runtime processes,
// real nats-server: the pool survives its provisioner's planned stop and its SIGKILL.
const cp = uniqueName("cp");
let f: ProvisionerFixture;
let provs: Awaited<ReturnType<typeof provisionerProcesses>>;
const seen = new Map<string, string>(); // every member and runtime met: id → host incarnation

beforeAll(async () => {
  f = await provisionerFixture(inject("natsUrl"));
  provs = await provisionerProcesses(inject("natsUrl"), f, {
    controlPlaneId: cp,
    maxConcurrentHostStartups: 2,
    heartbeatIntervalMs: 500,
    warmPool: { process: 2 },
  });
});
afterAll(async () => {
  provs?.killAll();
  // What a SIGKILLed provisioner left is no one's child: prove its end through /proc. Every process host
  // of the fixture's stream, not only the ones the test met: a failed test's last refill left two running.
  const killer = createProcessStrategy();
  const roster = (await new RosterView(f.store, f.streams.layout).current()).runtimes;
  const hosts = new Map(seen);
  for (const [id, s] of roster) if (s.hostIncarnation?.startsWith("pid:")) hosts.set(id, s.hostIncarnation);
  for (const [id, inc] of hosts) await killer.kill(id, { hostIncarnation: inc, node: roster.get(id)?.node }, 15_000);
  await f?.close();
});

const running = (inc: string) => {
  const p = parseProcessIncarnation(inc)!;
  return incarnationState(p.pid, p.startTime) === "running";
};
const types = (events: readonly { event: DroverEvent }[]) => events.map((s) => s.event.type);
/** `n` ready, unclaimed, live members of this control plane none of `old` names. */
const newMembers = (n: number, old: ReadonlySet<string>): Promise<RuntimeSummary[]> =>
  eventually(
    `${n} new ready pool members`,
    async () => {
      const r = await new RosterView(f.store, f.streams.layout).current();
      const m = [...r.runtimes.values()].filter(
        (s) =>
          s.pool?.controlPlaneId === cp &&
          s.pool.bindEndpoint !== undefined &&
          !s.pool.claimedFor &&
          !s.endedBy &&
          !old.has(s.runtimeInstanceId),
      );
      for (const s of m) seen.set(s.runtimeInstanceId, s.hostIncarnation!);
      return m.length >= n ? m : undefined;
    },
    90_000,
  );
/** Each member's host is gone and its log ends `retired` as a planned stop with the kill's proof. */
async function expectRetiredByStop(members: readonly RuntimeSummary[]) {
  for (const m of members) {
    await eventually(
      `${m.runtimeInstanceId} gone`,
      async () => (running(m.hostIncarnation!) ? undefined : true),
      30_000,
    );
    const events = await eventually(
      `${m.runtimeInstanceId} retired`,
      async () => {
        const es = await f.runtimeEvents(m.runtimeInstanceId);
        return types(es).includes("runtime.retired") ? es : undefined;
      },
      30_000,
    );
    expect(events.find((s) => s.event.type === "runtime.retired")?.event).toMatchObject({
      data: { stopped: { reason: { code: "host-stopped" }, proof: { kind: "process-exit" } } },
    });
  }
}

describe("warm pool across provisioner restarts (real provisioner and pooled runtime processes)", () => {
  it("a planned stop retires its members and the next provisioner refills; members a SIGKILLed provisioner left are stopped (or found dead) and retired by the next, which refills and serves a scale-out from its own pool", async () => {
    const p1 = provs.start();
    const a = await newMembers(2, new Set());
    expect(a.every((m) => running(m.hostIncarnation!))).toBe(true);
    p1.kill("SIGTERM");
    await exitedProcess(p1);
    await expectRetiredByStop(a);

    // Before: the stopped provisioner's members stayed "in the pool" in the log, the next one counted
    // them as held and started none, and could not bind them: every scale-out cold-started for ever.
    const p2 = provs.start();
    const b = await newMembers(2, new Set(a.map((m) => m.runtimeInstanceId)));
    p2.kill("SIGKILL");
    await exitedProcess(p2);
    expect(b.every((m) => running(m.hostIncarnation!))).toBe(true); // a SIGKILL leaves them running
    // One of them dies while no provisioner watches: its end is recorded by no one (it stayed listed in the pool).
    const dead = parseProcessIncarnation(b[0]!.hostIncarnation!)!;
    process.kill(dead.pid, "SIGKILL");
    await eventually("the member's process gone", async () => (running(b[0]!.hostIncarnation!) ? undefined : true));

    const p3 = provs.start();
    await expectRetiredByStop(b);
    const c = await newMembers(2, new Set([...a, ...b].map((m) => m.runtimeInstanceId)));
    const req = await f.request("tenant-wpr", cp);
    const settled = await f.settled("tenant-wpr", req.event.correlationId);
    const fulfilled = settled.find((s) => s.event.type === "scaleout.fulfilled")?.event;
    expect(fulfilled?.type).toBe("scaleout.fulfilled");
    const id = fulfilled?.type === "scaleout.fulfilled" ? fulfilled.data.runtimeInstanceId : "";
    const host = (await f.runtimeEvents(id)).find((s) => s.event.type === "runtime.host-started")?.event;
    expect(host?.type === "runtime.host-started" && host.data.convergenceSource).toMatch(/^warm-pool:pool-/);
    const memberId =
      host?.type === "runtime.host-started" ? host.data.convergenceSource!.slice("warm-pool:".length) : "";
    expect([...c.map((m) => m.runtimeInstanceId)]).toContain(memberId);
    if (host?.type === "runtime.host-started") seen.set(id, host.data.hostIncarnation);

    p3.kill("SIGTERM");
    await exitedProcess(p3);
    for (const inc of seen.values()) expect(running(inc)).toBe(false);
  }, 300_000);
});
