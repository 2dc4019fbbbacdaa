import { setTimeout as delay } from "node:timers/promises";
import type { NatsConnection } from "@nats-io/transport-node";
import { connectNats } from "../nats-connect.ts";
import { watchDisconnects, type Disconnect } from "./disconnects.ts";
import { DROVER_ACCOUNT } from "./server-config.ts";

/** How long to wait for more servers' CONNZ answers after the last one (a cluster answers once per server). */
const STALL_MS = 250;

interface ConnzReply {
  readonly server: { readonly id: string };
  readonly data?: { readonly connections?: readonly { readonly cid: number }[] };
}

/**
 * Disconnects every live connection of runtime `runtimeInstanceId` at once, as the kicker (the
 * system account's only user, rights.ts KICK_RIGHTS): asks every server for its connections of
 * that user in the DROVER account (`$SYS.REQ.SERVER.PING.CONNZ`, `user` is the name the runtime
 * connected with, its RuntimeInstanceId) and kicks each by client id on the server holding it
 * (`$SYS.REQ.SERVER.<id>.KICK`, nats-server 2.10+). The client's reconnect asks the auth callout
 * again, which refuses a fenced runtime. Returns how many connections were kicked.
 */
export async function kickRuntime(nc: NatsConnection, runtimeInstanceId: string): Promise<number> {
  const filter = JSON.stringify({ user: runtimeInstanceId, acc: DROVER_ACCOUNT, limit: 1024 });
  const replies = await nc.requestMany("$SYS.REQ.SERVER.PING.CONNZ", filter, {
    strategy: "stall",
    stall: STALL_MS,
    maxWait: 5_000,
  });
  let kicked = 0;
  for await (const m of replies) {
    const r = m.json<ConnzReply>();
    for (const c of r.data?.connections ?? []) {
      await nc.request(`$SYS.REQ.SERVER.${r.server.id}.KICK`, JSON.stringify({ cid: c.cid }), { timeout: 5_000 });
      kicked++;
    }
  }
  return kicked;
}

/** What {@link kickUntilGone} did: connections kicked, rounds asked, and how many a last round still saw. */
export interface KickResult {
  readonly kicked: number;
  readonly rounds: number;
  /** Connections the last round still found (0: none of the user's connections remained). */
  readonly remaining: number;
}

export interface KickUntilGoneOptions {
  /** Wait between rounds: longer than an auth callout answer (default 250 ms). */
  readonly settleMs?: number;
  /** The most rounds (default 8); the result says what the last one still found. */
  readonly maxRounds?: number;
  /** Called after each round (tests use it to open a connection between two rounds). */
  readonly afterRound?: (round: number, kicked: number) => Promise<void>;
}

/**
 * Kicks runtime `runtimeInstanceId`'s connections until a round finds none, for a runtime whose
 * credentials are already revoked (its `fenced` appended: the auth callout refuses it from now on).
 * One CONNZ + KICK round can miss a connection: one that reconnects between the CONNZ answer and
 * the KICK (a new client id), or one the callout authorized just before the fence was appended
 * that registers after the CONNZ answer. So rounds repeat, `settleMs` apart, and stop only at a
 * round that finds no connection of that user and began at least `settleMs` after the last kick
 * (any authorization in flight then has registered, or was asked after the fence and refused);
 * at most `maxRounds`.
 */
export async function kickUntilGone(
  nc: NatsConnection,
  runtimeInstanceId: string,
  opts: KickUntilGoneOptions = {},
): Promise<KickResult> {
  const settleMs = opts.settleMs ?? 250;
  const maxRounds = opts.maxRounds ?? 8;
  let kicked = 0;
  let last = 0;
  for (let round = 1; round <= maxRounds; round++) {
    last = await kickRuntime(nc, runtimeInstanceId);
    kicked += last;
    await opts.afterRound?.(round, last);
    // The first round's zero proves nothing about an authorization still in flight: ask once more.
    if (last === 0 && round > 1) return { kicked, rounds: round, remaining: 0 };
    if (round < maxRounds) await delay(settleMs);
  }
  return { kicked, rounds: maxRounds, remaining: last };
}

/**
 * A kicker connection from DROVER_NATS_KICK_CREDS (recovery's), or undefined when unset (an open
 * server): it kicks fenced runtimes and hears the DROVER account's closed connections (disconnects.ts).
 */
export async function kickerFromEnv(): Promise<
  | {
      kick(runtimeInstanceId: string): Promise<KickResult>;
      disconnects(onDisconnect: (d: Disconnect) => void): () => void;
      close(): Promise<void>;
    }
  | undefined
> {
  const creds = process.env.DROVER_NATS_KICK_CREDS;
  delete process.env.DROVER_NATS_KICK_CREDS;
  if (!creds) return undefined;
  const nc = await connectNats({ creds, name: "recovery-kicker" });
  return {
    kick: (id) => kickUntilGone(nc, id),
    disconnects: (onDisconnect) => watchDisconnects(nc, onDisconnect),
    close: () => nc.drain(),
  };
}
