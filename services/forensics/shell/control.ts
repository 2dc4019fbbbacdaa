import type { NatsConnection, Subscription } from "@nats-io/transport-node";
import type { ForensicsRebuildReply as RebuildReply } from "../../../contracts/index.ts";
import type { ForensicsService } from "./service.ts";

export type { RebuildReply };

/**
 * Answers rebuild requests on `subject` (`drover-ctl.<controlPlaneId>.forensics.rebuild`): drops
 * the read models, replays the stream from sequence 1 and replies with the position reached. The
 * reply is sent only when the rebuild is complete, so a requester that waits for it can query at
 * once; concurrent requests are serialised by the service. A failed rebuild replies `ok: false`
 * with the error message (the projector keeps following the stream from where the rebuild got).
 */
export function serveRebuild(
  nc: NatsConnection,
  subject: string,
  service: ForensicsService,
  log?: { info(o: object, msg: string): void },
): Subscription {
  return nc.subscribe(subject, {
    callback: (err, msg) => {
      if (err) return;
      log?.info({ subject }, "rebuild requested");
      service.rebuild().then(
        (position) => msg.respond(JSON.stringify({ ok: true, position } satisfies RebuildReply)),
        (e: unknown) =>
          msg.respond(JSON.stringify({ ok: false, error: String((e as Error).message ?? e) } satisfies RebuildReply)),
      );
    },
  });
}
