import type { JetStreamManager } from "@nats-io/jetstream";
import type { NatsConnection, Subscription } from "@nats-io/transport-node";
import { startHistoryResponder, type HistoryResponderOptions, type StreamLayout } from "../../streams/index.ts";

/** The provisioner's history responder, stopped and started again as a provisioner's SIGKILL and restart do. */
export interface HistorySwitch {
  stop(): Promise<void>;
  start(): void;
}

/**
 * Starts the history responder on `nc` (as the provisioner does: runtimes read their histories from
 * it, streams/history-responder.ts) and returns the switch a test turns it off and on with. Used by
 * the control-plane double and the NATS-auth fixture.
 */
export function historyResponderSwitch(
  nc: NatsConnection,
  jsm: JetStreamManager,
  layout: StreamLayout,
  options?: HistoryResponderOptions,
): HistorySwitch {
  let responder: Subscription | undefined = startHistoryResponder(nc, jsm, layout, options);
  return {
    async stop() {
      responder?.unsubscribe();
      responder = undefined;
      await nc.flush();
    },
    start() {
      responder ??= startHistoryResponder(nc, jsm, layout, options);
    },
  };
}
