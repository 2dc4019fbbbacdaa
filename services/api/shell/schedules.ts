import { countFires } from "../../../aggregates/schedule-plan.ts";
import { checkSpec, foldSchedule, isScheduleEvent, type FoldedScheduleEvent } from "../../../aggregates/schedule.ts";
import {
  buildEvent,
  DroverError,
  ScheduleId,
  tenantSettingsOf,
  type DataOf,
  type TenantId,
} from "../../../contracts/index.ts";
import { aggregateSubject, scheduleRef } from "../../../streams/subjects.ts";
import { scheduleView, type CreateScheduleBody, type ScheduleView } from "../domain/schedule-view.ts";
import { checkDag } from "../domain/submission.ts";
import type { ApiDeps } from "./deps.ts";

/** Most fires one backfill may start. */
export const MAX_BACKFILL_FIRES = 10_000;

type Change = "paused" | "resumed" | "deleted";

async function readSchedule(deps: ApiDeps, tenantId: TenantId, scheduleId: string) {
  const h = await deps.store.read(scheduleRef(tenantId, scheduleId), { skipUndecodable: true });
  const events: FoldedScheduleEvent[] = [];
  for (const e of h.events) if (isScheduleEvent(e.event)) events.push({ seq: e.seq, time: e.time, event: e.event });
  return { state: { ...foldSchedule(events), lastSeq: h.lastSeq }, events };
}

export async function getSchedule(deps: ApiDeps, tenantId: TenantId, scheduleId: string): Promise<ScheduleView> {
  const { state, events } = await readSchedule(deps, tenantId, scheduleId);
  const view = scheduleView(state, tenantId, events, deps.clock.now().getTime());
  if (view === undefined) throw new DroverError("not-found", `no schedule ${scheduleId}`, { details: { scheduleId } });
  return view;
}

/** Every schedule of the tenant (deleted ones left out), oldest first. */
export async function listSchedules(deps: ApiDeps, tenantId: TenantId): Promise<ScheduleView[]> {
  const ids: string[] = [];
  await deps.store.replay(
    { seq: 1 },
    (e) => void (e.event.type === "schedule.created" && ids.push(e.event.data.scheduleId)),
    { filter: `${deps.layout.eventPrefix}.schedule.${tenantId}.*.created` },
  );
  const views = await Promise.all(ids.map((id) => getSchedule(deps, tenantId, id)));
  return views.filter((v) => v.status !== "deleted");
}

const append = async (
  deps: ApiDeps,
  tenantId: TenantId,
  scheduleId: string,
  expectedSeq: number,
  event: Parameters<ApiDeps["store"]["append"]>[1],
) => {
  const ref = scheduleRef(tenantId, scheduleId);
  await deps.store.append(ref, event, { expectedSeq, msgId: `${aggregateSubject(deps.layout, ref)}:${event.eventId}` });
};

const origin = (deps: ApiDeps, tenantId: TenantId, scheduleId: string, requestId: string) => ({
  tenantId,
  correlationId: scheduleId,
  causationId: `http-request:${requestId}`,
  writer: { service: "api" as const, instanceId: deps.instanceId },
});

/** Creates a schedule (`schedule.created` at expected sequence 0): an id in use answers 409 `version-conflict`. */
export async function createSchedule(
  deps: ApiDeps,
  tenantId: TenantId,
  body: CreateScheduleBody,
  by: string,
  requestId: string,
): Promise<ScheduleView> {
  const why = checkSpec(body.spec, deps.clock.now().getTime());
  if (why !== undefined) throw new DroverError("schedule-invalid", why, { details: { spec: body.spec } });
  const dag = checkDag(body.dag, tenantSettingsOf(deps.config, tenantId), tenantId);
  const scheduleId = body.scheduleId ?? ScheduleId.parse(`sch-${deps.newId()}`.slice(0, 63));
  const data: DataOf<"schedule.created"> = { ...body, dag, scheduleId, by };
  const event = buildEvent("schedule.created", data, origin(deps, tenantId, scheduleId, requestId), {
    eventId: `ev-${deps.newId()}`,
    now: deps.clock.now(),
  });
  await append(deps, tenantId, scheduleId, 0, event);
  return getSchedule(deps, tenantId, scheduleId);
}

/**
 * Pauses, resumes or deletes: conditional on the schedule's last sequence; a change that is
 * already true (pausing a paused schedule) appends nothing. The scheduler appends a fire every
 * time the schedule is due, so a conflict is read again: the change is decided anew on what is
 * there now (deleted meanwhile → 404, already true → nothing), up to `CHANGE_ATTEMPTS` times.
 */
export async function changeSchedule(
  deps: ApiDeps,
  tenantId: TenantId,
  scheduleId: string,
  change: Change,
  by: string,
  requestId: string,
): Promise<ScheduleView> {
  const event = buildEvent(`schedule.${change}`, { by }, origin(deps, tenantId, scheduleId, requestId), {
    eventId: `ev-${deps.newId()}`,
    now: deps.clock.now(),
  });
  await onLatest(deps, tenantId, scheduleId, async (state) => {
    const noop =
      (change === "paused" && state.status === "paused") || (change === "resumed" && state.status === "active");
    if (!noop) await append(deps, tenantId, scheduleId, state.lastSeq, event);
  });
  return getSchedule(deps, tenantId, scheduleId);
}

/** How often a schedule change re-reads the schedule after a concurrent append (a fire) moved it. */
export const CHANGE_ATTEMPTS = 5;

type LiveState = Awaited<ReturnType<typeof readSchedule>>["state"];

/** Runs `act` on the schedule's latest state; a version conflict re-reads and acts again. */
async function onLatest(
  deps: ApiDeps,
  tenantId: TenantId,
  scheduleId: string,
  act: (state: LiveState) => Promise<void>,
): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    const { state } = await readSchedule(deps, tenantId, scheduleId);
    if (state.status === "none" || state.status === "deleted")
      throw new DroverError("not-found", `no schedule ${scheduleId}`, { details: { scheduleId } });
    try {
      return await act(state);
    } catch (err) {
      if (!(err instanceof DroverError && err.code === "version-conflict") || attempt >= CHANGE_ATTEMPTS) throw err;
    }
  }
}

/** Asks for a backfill of [from, to]: every nominal time the schedule names there starts a run (at most 10 000). */
export async function backfillSchedule(
  deps: ApiDeps,
  tenantId: TenantId,
  scheduleId: string,
  range: { from: string; to: string },
  by: string,
  requestId: string,
): Promise<{ backfillId: string; fires: number; schedule: ScheduleView }> {
  const backfillId = ScheduleId.parse(`bf-${deps.newId()}`.slice(0, 63));
  const eventId = `ev-${deps.newId()}`;
  let fires = 0;
  await onLatest(deps, tenantId, scheduleId, async (state) => {
    const from = Date.parse(range.from);
    const to = Date.parse(range.to);
    fires = to < from ? 0 : countFires(state, from, to, MAX_BACKFILL_FIRES);
    if (fires === 0 || fires > MAX_BACKFILL_FIRES)
      throw new DroverError(
        "schedule-invalid",
        fires === 0
          ? `the schedule names no time in ${range.from} .. ${range.to}`
          : `a backfill starts at most ${MAX_BACKFILL_FIRES} runs; ${range.from} .. ${range.to} names more`,
        { details: { ...range } },
      );
    const event = buildEvent(
      "schedule.backfill-requested",
      { backfillId, from: new Date(from).toISOString(), to: new Date(to).toISOString(), by },
      origin(deps, tenantId, scheduleId, requestId),
      { eventId, now: deps.clock.now() },
    );
    await append(deps, tenantId, scheduleId, state.lastSeq, event);
  });
  return { backfillId, fires, schedule: await getSchedule(deps, tenantId, scheduleId) };
}
