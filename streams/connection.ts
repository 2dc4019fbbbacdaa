import type { JetStreamClient, JetStreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";

/** What the streams module accepts as its handle on NATS: a connection or a JetStream context built on one. */
export type NatsHandle = NatsConnection | JetStreamClient | JetStreamManager;

/**
 * The connection under a JetStream client/manager. The @nats-io 3.x client keeps it as the public
 * `nc` field of its API classes (jsbaseclient_api.d.ts) but the exported types do not name it;
 * we need it for the server version and for the raw atomic-batch protocol.
 */
export function connectionOf(h: NatsHandle): NatsConnection {
  const inner = (h as { nc?: NatsConnection }).nc;
  if (inner && typeof inner.request === "function") return inner;
  if (typeof (h as NatsConnection).request === "function") return h as NatsConnection;
  throw new TypeError("expected a NatsConnection, JetStreamClient or JetStreamManager");
}
