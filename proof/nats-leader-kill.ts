import type { JetStreamManager } from "@nats-io/jetstream";
import type { NatsCluster } from "../platform/nats-cluster.ts";
import type { AssertionResult } from "./assertions.ts";

/** What `--kill-nats-leader` did: which node led the event stream, who took over, and when. */
export interface NatsLeaderKill {
  readonly killed: string;
  /** ms from the SIGKILL to a new leader of the event stream (as the stream info reports it). */
  readonly electedMs: number;
  readonly elected: string;
  /** ms from the SIGKILL to the killed node healthy again (restarted on its own store). */
  readonly restartedMs: number;
  /** The restarted node is a current replica of the event stream again at the end of the proof. */
  readonly currentAtEnd: boolean;
}

/** How long the killed node stays down once a new leader is elected (the cluster runs on two nodes meanwhile). */
const DOWN_AFTER_ELECTION_MS = 5_000;

const leaderOf = async (jsm: JetStreamManager, stream: string): Promise<string | undefined> =>
  (await jsm.streams.info(stream).catch(() => undefined))?.cluster?.leader;

/**
 * `drover proof --kill-nats-leader`: once triggered (mid-proof, at the last runtime kill) it
 * SIGKILLs the node leading the event stream, waits for the new leader, keeps the node down a
 * while longer, then restarts it on its own JetStream store. `finish()` reports what happened.
 */
export function natsLeaderKiller(cluster: NatsCluster, jsm: JetStreamManager, stream: string) {
  let run: Promise<Omit<NatsLeaderKill, "currentAtEnd">> | undefined;
  const kill = async () => {
    const killed = await leaderOf(jsm, stream);
    if (!killed) throw new Error(`the ${stream} stream has no leader to kill`);
    const t0 = Date.now();
    await cluster.kill(killed);
    let elected: string | undefined;
    while (!elected || elected === killed) {
      if (Date.now() - t0 > 60_000) throw new Error(`no new ${stream} leader within 60 s of killing ${killed}`);
      await new Promise((r) => setTimeout(r, 100));
      elected = await leaderOf(jsm, stream);
    }
    const electedMs = Date.now() - t0;
    await new Promise((r) => setTimeout(r, DOWN_AFTER_ELECTION_MS));
    await cluster.restart(killed);
    return { killed, elected, electedMs, restartedMs: Date.now() - t0 };
  };
  return {
    trigger(): void {
      run ??= kill();
      run.catch(() => undefined);
    },
    async finish(): Promise<NatsLeaderKill | Error> {
      if (!run) return new Error("the NATS leader kill was never triggered (no runtime was killed)");
      try {
        const r = await run;
        const deadline = Date.now() + 30_000;
        let current = false;
        while (!current && Date.now() < deadline) {
          const info = await jsm.streams.info(stream).catch(() => undefined);
          current =
            info?.cluster?.leader === r.killed ||
            (info?.cluster?.replicas ?? []).some((p) => p.name === r.killed && p.current);
          if (!current) await new Promise((res) => setTimeout(res, 250));
        }
        return { ...r, currentAtEnd: current };
      } catch (e) {
        return e as Error;
      }
    },
  };
}

/** The proof's assertion for the leader kill: it happened, a new leader took over, and the node is back as a replica. */
export function leaderKillAssertion(r: NatsLeaderKill | Error): AssertionResult {
  if (r instanceof Error)
    return {
      name: "nats: the event stream's leader was SIGKILLed and restarted",
      ok: false,
      violations: 1,
      detail: r.message,
    };
  return {
    name: "nats: the event stream's leader was SIGKILLed and restarted",
    ok: r.currentAtEnd,
    violations: r.currentAtEnd ? 0 : 1,
    detail: `${r.killed} killed mid-proof, ${r.elected} elected in ${r.electedMs} ms, ${r.killed} restarted after ${(r.restartedMs / 1000).toFixed(1)} s and ${r.currentAtEnd ? "is a current replica again" : "is NOT current again within 30 s"}`,
  };
}
