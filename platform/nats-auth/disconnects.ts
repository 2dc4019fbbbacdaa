import type { NatsConnection } from "@nats-io/transport-node";
import { z } from "zod";
import { DROVER_ACCOUNT } from "./server-config.ts";

/** The server's advisory subject for connections of the DROVER account that closed (system account). */
export const DISCONNECT_ADVISORY = `$SYS.ACCOUNT.${DROVER_ACCOUNT}.DISCONNECT`;

/**
 * The parts of nats-server's `io.nats.server.advisory.v1.client_disconnect` recovery reads. `user`
 * is the name the connection authenticated as (the server's raw auth user: a runtime's
 * RuntimeInstanceId, accepted by the auth callout); any other field is ignored.
 */
const Advisory = z.object({
  type: z.literal("io.nats.server.advisory.v1.client_disconnect"),
  client: z.object({ user: z.string().max(200).optional() }),
  reason: z.string().max(500).optional(),
});

/** One connection of the DROVER account closed, as the server saw it. */
export interface Disconnect {
  readonly user: string;
  readonly reason: string;
}

/**
 * Calls `onDisconnect` for every closed connection of the DROVER account that authenticated as a
 * user, on a connection of the system account (the kicker's: rights.ts KICK_RIGHTS may subscribe to
 * this advisory and nothing else of it). The server writes the advisory, so a tenant cannot forge it;
 * it is a signal for health, never a proof that anything died. Returns a stop function.
 */
export function watchDisconnects(nc: NatsConnection, onDisconnect: (d: Disconnect) => void): () => void {
  const sub = nc.subscribe(DISCONNECT_ADVISORY, {
    callback: (err, m) => {
      if (err) return;
      let body: unknown;
      try {
        body = m.json();
      } catch {
        return;
      }
      const a = Advisory.safeParse(body);
      // The subject names the account: every advisory on it is of a DROVER connection.
      if (!a.success || !a.data.client.user) return;
      onDisconnect({ user: a.data.client.user, reason: a.data.reason ?? "" });
    },
  });
  return () => sub.unsubscribe();
}
