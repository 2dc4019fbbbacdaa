import { createHmac } from "node:crypto";
import { outputsRead, type AuthScope, type Rights } from "./rights.ts";

/**
 * The password of runtime `runtimeInstanceId` on layout `eventPrefix`: HMAC-SHA256 of the command
 * secret over a label no command token is derived from (`nats-runtime:` cannot start a
 * RuntimeInstanceId). The provisioner derives it when it starts the host; the auth callout
 * (callout.ts) re-derives it, so nothing is stored or written to an event.
 */
export const runtimePasswordFor = (secret: string, eventPrefix: string, runtimeInstanceId: string): string =>
  createHmac("sha256", secret).update(`nats-runtime:${eventPrefix}:${runtimeInstanceId}`).digest("hex");

/** Tenants a runtime may write for: its owner, or every tenant (`*`) for a shared or group runtime. */
export type RuntimeTenants = readonly string[];

/**
 * What one runtime may do: publish its own heartbeat; append the execution-journal events and the
 * run's `started`/`completed`/`failed`/`cancelled` of the tenants that may use it; store and read
 * its tenants' outputs and step cache keys; read its tenants' exec and run aggregates (the subject-form
 * Direct Get and the history responder) and subscribe to their signals. No consumer of any kind.
 * No `run.submitted` or `run.cancel-requested` (a run step's child run is journaled, admission
 * submits it: docs/control-flow.md "Child runs"). Nothing of `$JS.API` that creates, changes or
 * deletes a stream or a durable consumer, no runtime lifecycle event, no other runtime's heartbeat,
 * and no read of another tenant's events.
 */
export function runtimeRights(s: AuthScope, runtimeInstanceId: string, tenants: RuntimeTenants): Rights {
  const pub = [
    "$JS.API.INFO",
    `${s.heartbeats}.${runtimeInstanceId}`,
    ...outputsRead(s, tenants),
    `$JS.API.STREAM.INFO.${s.eventStream}`,
    `$JS.API.STREAM.INFO.${s.heartbeatStream}`,
    `$JS.API.STREAM.INFO.${s.deadLetterStream}`,
  ];
  const sub = [`_INBOX_${runtimeInstanceId}.>`];
  for (const t of tenants) {
    pub.push(`${s.events}.exec.${t}.*.*`);
    // Its tenants' stored outputs: `<outputs>.<tenant>.<sha256>.<chunk>`, each written once.
    pub.push(`${s.outputs}.${t}.*.*`);
    // Its tenants' step cache keys (docs/step-cache.md): written, and read by the subject-form Direct Get.
    pub.push(`${s.stepCache}.${t}.*`, `$JS.API.DIRECT.GET.${s.stepCacheStream}.${s.stepCache}.${t}.*`);
    for (const n of ["started", "completed", "failed", "cancelled"]) pub.push(`${s.events}.run.${t}.*.${n}`);
    // Reads name their subject in the request subject only (streams/scoped-read.ts): the last
    // message on a filter by the subject-form Direct Get, and an aggregate's history from the
    // history responder (streams/history-responder.ts). No get by sequence or with a filter in the
    // body (`$JS.API.DIRECT.GET.<stream>`, `STREAM.MSG.GET`), and no consumer at all.
    for (const agg of ["exec", "run"]) {
      pub.push(`$JS.API.DIRECT.GET.${s.eventStream}.${s.events}.${agg}.${t}.>`);
      pub.push(`${s.history}.${agg}.${t}.*`);
    }
    // Its waits' signal feed (services/runtime/shell/signal-feed.ts): the API's signals as published.
    sub.push(`${s.events}.run.${t}.*.signal-received`);
  }
  return {
    publish: {
      allow: pub,
      deny: [
        // No consumer of any kind, on any stream: create, durable create, next, delete, info, list.
        "$JS.API.CONSUMER.>",
        // Recovery's journal event (it moves the owner epoch): `exec.*` above would allow it.
        `${s.events}.exec.*.*.paused-for-recovery`,
      ],
    },
    subscribe: { allow: sub, deny: [] },
    allowResponses: false,
  };
}
