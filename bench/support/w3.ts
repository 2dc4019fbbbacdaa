import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { Redis } from "ioredis";
import { apiClient, type chainDag } from "../../platform/api-client.ts";
import { SERVICES, startControlPlane } from "../../platform/control-plane-processes.ts";
import { connectHarness } from "../../platform/nats-auth/server-keys.ts";
import { createEventStore, type StoredEvent } from "../../streams/index.ts";
import { eventually } from "../../test/support/streams.ts";
import { runEnds } from "./run-ends.ts";
import { WORKLOAD_TENANT } from "./workload-tenant.ts";

export interface W3Result {
  /** SIGKILL → first step completed after it, ms (stored timestamps). */
  readonly firstStepMs: number;
  /** SIGKILL → last of the 20 runs completed, ms. */
  readonly allDoneMs: number;
  /** step-completed events beyond one per (run, step). */
  readonly duplicates: number;
  /**
   * The 20 executions' resumption, ms from the kill: the first and last `resumed`, and the first and
   * last run's first step after the fence (how together the 20 came back).
   */
  readonly spread: Readonly<Record<string, number>>;
  /** Where the time went, ms from the kill: the killed runtime's suspected/fenced, its replacement's claim/publish, the first resumed execution. */
  readonly trace: Readonly<Record<string, number>>;
}

const TOKEN = "bench-token-w3-recovery-01";

/**
 * One W3 round on a control plane of its own (issue #15 item 5): a warm-up run brings the tenant's
 * runtime up, then 20 runs of 50 steps of 20 ms are submitted to it and it is SIGKILLed once 500 of
 * their steps completed. With `pool` > 0 the provisioner keeps that many warm runtimes and the kill
 * waits until the pool is full again (as a pool is before an incident of a running control plane).
 */
export async function runW3(
  servers: { nats: string; redis: string; mongo: string },
  pool: number,
  chain: typeof chainDag,
): Promise<W3Result> {
  // Each round's control plane starts from an empty capacity view (the previous round's runtimes are gone).
  const redis = new Redis(servers.redis);
  await redis.flushdb();
  redis.disconnect();
  const cp = await startControlPlane({
    natsUrl: servers.nats,
    redisUrl: servers.redis,
    mongoUrl: servers.mongo,
    services: [...SERVICES, "forensics"],
    config: {
      controlPlaneId: "cp-w3",
      // A deployment's heartbeat (the default): the SIGKILL is detected by the observed process exit.
      heartbeatIntervalMs: 1000,
      dispatchTimeoutMs: 3000,
      ...(pool > 0 ? { warmPool: { process: pool } } : {}),
      tenants: [WORKLOAD_TENANT],
      tokens: { [TOKEN]: { role: "tenant", tenantId: "t-w" } },
    },
  });
  const nc = await connectHarness({ servers: servers.nats });
  try {
    const api = apiClient(cp.apiUrl, TOKEN);
    const store = createEventStore(nc, cp.layout);
    const log = async () => {
      const all: StoredEvent[] = [];
      await store.replay({ seq: 1 }, (e) => void all.push(e));
      return all;
    };
    const ends = await runEnds(cp.apiUrl, TOKEN);
    // Warm-up: the tenant's runtime exists and has run a chain before W3 starts.
    await ends.ended((await api.submit(chain(5, 0))).body.sharedRunId as string, 120_000);
    const runtimeOf = (e: StoredEvent) => e.subject.split(".runtime.")[1]?.split(".")[0] ?? "";
    if (pool > 0)
      await eventually(
        `${pool} warm pool members ready`,
        async () => {
          const all = await log();
          const n = (type: string) => all.filter((e) => e.event.type === type).length;
          return n("runtime.pool-member-ready") - n("runtime.pool-member-claimed") >= pool ? true : undefined;
        },
        120_000,
      );
    // The kill's workload starts only once every unclaimed member has warmed its step path (its
    // `pool-warmed-up` line: runtime warm-up-steps.ts, 2 s after it is announced), as a running
    // control plane's members have long before an incident. Before (session 37), the kill came ~1–2 s
    // after the members' readiness: the claimed one was bound cold (~0.24 against ~0.05 ms of CPU
    // per step) and the spare warmed up inside the recovery's window.
    if (pool > 0)
      await eventually(
        `${pool} warm pool members warmed up`,
        async () => {
          const all = await log();
          const claimed = new Set(all.filter((e) => e.event.type === "runtime.pool-member-claimed").map(runtimeOf));
          const members = all
            .filter((e) => e.event.type === "runtime.pool-member-ready")
            .map(runtimeOf)
            .filter((id) => !claimed.has(id));
          const warmed = await Promise.all(
            members.map((id) =>
              readFile(join(cp.logDir, "runtimes", `${id}.log`), "utf8").then(
                (text) => text.includes('"event":"pool-warmed-up"'),
                () => false,
              ),
            ),
          );
          return warmed.filter(Boolean).length >= pool ? true : undefined;
        },
        120_000,
      );
    // The tenant's runtimes (never a pool member: its pid is a warm spare, not the victim).
    const victims: number[] = [];
    for (const e of await log())
      if (e.event.type === "runtime.host-started" && e.event.data.pid && runtimeOf(e).startsWith("rt-"))
        victims.push(e.event.data.pid);
    const w3: string[] = [];
    let w3Steps = 0;
    const sub = nc.subscribe(`${cp.layout.eventPrefix}.exec.t-w.*.step-completed`, {
      callback: (_e, m) => void (w3.includes((m.json() as { correlationId: string }).correlationId) && w3Steps++),
    });
    for (let k = 0; k < 20; k++) w3.push((await api.submit(chain(50, 20))).body.sharedRunId as string);
    await eventually("500 W3 steps", async () => (w3Steps >= 500 ? true : undefined), 300_000);
    sub.unsubscribe();
    const killedAt = Date.now();
    for (const pid of victims)
      try {
        process.kill(pid, "SIGKILL");
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== "ESRCH") throw e;
      }
    for (const id of w3) await ends.ended(id, 180_000);
    ends.close();
    const all = await log();
    const at = (type: string, id: string) =>
      all.find((e) => e.event.type === type && e.event.correlationId === id)?.time.getTime();
    const steps = all.filter((e) => e.event.type === "exec.step-completed" && w3.includes(e.event.correlationId));
    // A step of the victim's still in flight at the kill can be stored just after it (it was published
    // before): the first step after the kill is the first one stored after the victim was fenced.
    const fencedSeq = all.find((e) => e.time.getTime() >= killedAt && e.event.type === "runtime.fenced")?.seq;
    if (fencedSeq === undefined) throw new Error("W3: the killed runtime was never fenced");
    const firstAfter = Math.min(...steps.filter((e) => e.seq > fencedSeq).map((e) => e.time.getTime()));
    const lastDone = Math.max(...w3.map((id) => at("run.completed", id)!));
    const key = (e: StoredEvent) =>
      e.event.type === "exec.step-completed" ? `${e.event.correlationId}/${e.event.data.stepId}` : "";
    const first = (pred: (e: StoredEvent) => boolean) => {
      const e = all.find((x) => x.time.getTime() >= killedAt && pred(x));
      return e ? e.time.getTime() - killedAt : -1;
    };
    const resumedAt = all
      .filter((e) => e.event.type === "exec.resumed" && e.time.getTime() >= killedAt)
      .map((e) => e.time.getTime() - killedAt);
    const firstStepOf = w3.map(
      (id) =>
        Math.min(
          ...steps.filter((e) => e.seq > fencedSeq && e.event.correlationId === id).map((e) => e.time.getTime()),
        ) - killedAt,
    );
    const spread = {
      resumedFirst: Math.min(...resumedAt),
      resumedLast: Math.max(...resumedAt),
      resumedCount: resumedAt.length,
      firstStepFirst: Math.min(...firstStepOf),
      firstStepLast: Math.max(...firstStepOf),
    };
    const trace = {
      hostExited: first((e) => e.event.type === "runtime.host-exited"),
      suspected: first((e) => e.event.type === "runtime.suspected"),
      fenced: first((e) => e.event.type === "runtime.fenced"),
      scaleOutRequested: first((e) => e.event.type === "scaleout.requested"),
      claimed: first((e) => e.event.type === "runtime.pool-member-claimed"),
      hostStarted: first((e) => e.event.type === "runtime.host-started" && runtimeOf(e).startsWith("rt-")),
      commandLayer: first((e) => e.event.type === "runtime.readiness-layer-passed" && e.event.data.layer === "command"),
      capacityPublished: first((e) => e.event.type === "runtime.capacity-published"),
      resumeDispatched: first((e) => e.event.type === "run.dispatched" && !!e.event.data.resumeExecutionId),
      resumed: first((e) => e.event.type === "exec.resumed"),
    };
    if (process.env.DROVER_KEEP_LOGS === "1")
      await writeFile(
        join(cp.logDir, "events.jsonl"),
        [JSON.stringify({ killedAt })]
          .concat(
            all.map((e) =>
              JSON.stringify({ seq: e.seq, t: e.time.getTime() - killedAt, s: e.subject, d: e.event.data }),
            ),
          )
          .join("\n"),
      );
    return {
      firstStepMs: firstAfter - killedAt,
      allDoneMs: lastDone - killedAt,
      duplicates: steps.length - new Set(steps.map(key)).size,
      spread,
      trace,
    };
  } finally {
    await nc.close();
    if (process.env.DROVER_KEEP_LOGS === "1") console.log(`[w3] logs in ${cp.logDir}`);
    await cp.stop(process.env.DROVER_KEEP_LOGS === "1");
  }
}
