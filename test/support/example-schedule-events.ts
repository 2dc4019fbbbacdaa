/** One valid example of every `schedule.*` event (spread into example-events.ts's EXAMPLE_BUILDERS). */
import { ScheduleId, type EventOf } from "../../contracts/index.ts";
import { envelope, exampleDag, ids } from "./example-events.ts";

const schedule = ScheduleId.parse("sch-nightly");
const by = "token:ci";
const at = "2026-01-02T03:00:00.000Z";

export const SCHEDULE_BUILDERS = {
  // The flow key aggregate (docs/flow-control.md): one example rides along with the schedule's.
  "flowkey.acquired": (): EventOf<"flowkey.acquired"> => ({
    ...envelope("flowkey.acquired"),
    tenantId: ids.tenant,
    data: {
      name: "openai",
      key: "openai:gpt-4o",
      sharedRunId: ids.sharedRun,
      at,
      tat: "2026-01-02T03:00:00.100Z",
      inFlight: 2,
    },
  }),
  // The worker deploys aggregate (contracts/events-worker.ts) rides along too.
  "worker.deploy-requested": (): EventOf<"worker.deploy-requested"> => ({
    ...envelope("worker.deploy-requested"),
    tenantId: ids.tenant,
    data: { requestedBy: "tenant:acme" },
  }),
  "worker.deployed": (): EventOf<"worker.deployed"> => ({
    ...envelope("worker.deployed"),
    tenantId: ids.tenant,
    data: {
      version: "b".repeat(64),
      image: `registry.local/drover/runtime@sha256:${"b".repeat(64)}`,
      kinds: ["work"],
      requestedBy: "tenant:acme",
      requestSeq: 3,
      previous: "a".repeat(64),
    },
  }),
  // The runtime quota aggregate (contracts/events-quota.ts) rides along too.
  "quota.runtime-slot-taken": (): EventOf<"quota.runtime-slot-taken"> => ({
    ...envelope("quota.runtime-slot-taken"),
    tenantId: ids.tenant,
    data: {
      runtimeInstanceId: ids.runtime,
      scaleOutRequestId: ids.scaleOut,
      live: 1,
      maxRuntimeInstances: 2,
    },
  }),
  "schedule.created": (): EventOf<"schedule.created"> => ({
    ...envelope("schedule.created"),
    tenantId: ids.tenant,
    data: {
      scheduleId: schedule,
      spec: { cron: "0 3 * * *", timezone: "Europe/Berlin" },
      dag: exampleDag,
      input: { day: "today" },
      labels: { team: "ml" },
      overlap: "skip",
      catchUpMs: 60_000,
      jitterMs: 0,
      by,
    },
  }),
  "schedule.paused": (): EventOf<"schedule.paused"> => ({
    ...envelope("schedule.paused"),
    tenantId: ids.tenant,
    data: { by },
  }),
  "schedule.resumed": (): EventOf<"schedule.resumed"> => ({
    ...envelope("schedule.resumed"),
    tenantId: ids.tenant,
    data: { by },
  }),
  "schedule.deleted": (): EventOf<"schedule.deleted"> => ({
    ...envelope("schedule.deleted"),
    tenantId: ids.tenant,
    data: { by },
  }),
  "schedule.backfill-requested": (): EventOf<"schedule.backfill-requested"> => ({
    ...envelope("schedule.backfill-requested"),
    tenantId: ids.tenant,
    data: { backfillId: ScheduleId.parse("bf-1"), from: "2026-01-01T00:00:00.000Z", to: at, by },
  }),
  "schedule.fired": (): EventOf<"schedule.fired"> => ({
    ...envelope("schedule.fired"),
    tenantId: ids.tenant,
    data: { nominalAt: at, sharedRunId: ids.sharedRun, backfillId: ScheduleId.parse("bf-1"), cancelled: ids.sharedRun },
  }),
  "schedule.skipped": (): EventOf<"schedule.skipped"> => ({
    ...envelope("schedule.skipped"),
    tenantId: ids.tenant,
    data: { nominalAt: at, reason: "missed", lastNominalAt: at, count: 1 },
  }),
};
