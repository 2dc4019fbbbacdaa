import type { NatsConnection, Subscription } from "@nats-io/transport-node";
import type { z } from "zod";
import type { CapacityRebuildReply } from "../../../contracts/index.ts";
import type { CapacityDescriptor } from "../../../aggregates/capacity/descriptor.ts";
import type { CapacityViewStore } from "../../../platform/capacity-view.ts";
import type { CapacityProjection } from "./projection.ts";

/**
 * Answers rebuild requests on `subject` (`<prefix>-ctl.<controlPlaneId>.capacity.rebuild`, what
 * `drover capacity-rebuild` sends): rebuilds the view from stream sequence 1 and replies, once it is
 * done, with what the view holds and what was folded; a failure replies `ok: false` with the error.
 * Requests are serialised by the projection.
 */
export function serveCapacityRebuild(
  nc: NatsConnection,
  subject: string,
  projection: CapacityProjection,
  view: CapacityViewStore<CapacityDescriptor>,
  log?: { info(o: object, msg: string): void },
): Subscription {
  return nc.subscribe(subject, {
    callback: (err, msg) => {
      if (err) return;
      const t0 = performance.now();
      log?.info({ subject }, "capacity rebuild requested");
      const answer = async (): Promise<z.input<typeof CapacityRebuildReply>> => {
        try {
          const facts = await projection.rebuild();
          const runtimes = (await view.all()).map((d) => d.runtimeInstanceId).sort();
          const reply = { ok: true as const, runtimes, ...facts, ms: Math.round(performance.now() - t0) };
          log?.info(reply, "capacity view rebuilt");
          return reply;
        } catch (e) {
          return { ok: false, error: String((e as Error)?.message ?? e) };
        }
      };
      void answer().then((reply) => msg.respond(JSON.stringify(reply)));
    },
  });
}
