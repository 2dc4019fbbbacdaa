import type { NatsConnection } from "@nats-io/transport-node";
import { connectNats } from "../nats-connect.ts";
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

/** A kicker connection from DROVER_NATS_KICK_CREDS (recovery's), or undefined when unset (an open server). */
export async function kickerFromEnv(): Promise<
  { kick(runtimeInstanceId: string): Promise<number>; close(): Promise<void> } | undefined
> {
  const creds = process.env.DROVER_NATS_KICK_CREDS;
  delete process.env.DROVER_NATS_KICK_CREDS;
  if (!creds) return undefined;
  const nc = await connectNats({ creds, name: "recovery-kicker" });
  return { kick: (id) => kickRuntime(nc, id), close: () => nc.drain() };
}
