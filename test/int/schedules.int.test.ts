import { jetstream } from "@nats-io/jetstream";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { buildEvent, TenantId, type DroverEvent, type EventOf } from "../../contracts/index.ts";
import { randomIds, systemClock } from "../../platform/envelope.ts";
import { startScheduler, type SchedulerService } from "../../services/scheduler/index.ts";
import { runRef, scheduleRef, type StoredEvent } from "../../streams/index.ts";
import { apiFixture, auth, validDag, type ApiFixture } from "../support/api-app.ts";
import { eventually } from "../support/streams.ts";

/**
 * Schedules against a real nats-server: created through the API (its routes, on a fixed clock),
 * fired by real scheduler services (real clock, two replicas at once, stopped and started
 * mid-flight). Exactly once per nominal time is read from the stream: every `schedule.fired` and
 * every `run.submitted` a fire appended atomically with it.
 */
const acme = TenantId.parse("acme");
const log = pino({ level: process.env.TEST_LOG ?? "silent" });

describe("schedules: the API creates and changes them, scheduler replicas fire each nominal time exactly once (real nats-server)", () => {
  let fx: ApiFixture;
  const schedulers: SchedulerService[] = [];
  const startOne = async (name: string) => {
    const s = await startScheduler({
      js: jetstream(fx.nc),
      store: fx.store,
      layout: fx.layout,
      clock: systemClock,
      log,
      tickMs: 50,
      env: { writer: { service: "scheduler", instanceId: name }, clock: systemClock, ids: randomIds },
    });
    schedulers.push(s);
    return s;
  };
  /** Runs before each append the API makes (a test lands a concurrent write there). */
  let beforeApiAppend: ((event: DroverEvent, expectedSeq: number | undefined) => Promise<void>) | undefined;
  beforeAll(async () => {
    fx = await apiFixture(inject("natsUrl"), {
      wrapStore: (store) => ({
        ...store,
        append: async (ref, event, opts) => {
          await beforeApiAppend?.(event, opts.expectedSeq);
          return store.append(ref, event, opts);
        },
      }),
    });
  });
  afterAll(async () => {
    for (const s of schedulers) await s.stop();
    await fx.close();
  });

  const api = (
    method: "GET" | "POST" | "DELETE",
    url: string,
    payload?: object,
    who: "acme" | "globex" | "operator" = "acme",
  ) => fx.app.inject({ method, url, headers: auth(who), ...(payload ? { payload } : {}) });
  const events = async (id: string) => {
    const all: StoredEvent[] = [];
    await fx.store.replay({ seq: 1 }, (e) => void all.push(e), { filter: `${fx.layout.eventPrefix}.>` });
    const fired = all.filter(
      (e): e is StoredEvent<EventOf<"schedule.fired">> =>
        e.event.type === "schedule.fired" && e.event.correlationId === id,
    );
    const skipped = all.filter(
      (e): e is StoredEvent<EventOf<"schedule.skipped">> =>
        e.event.type === "schedule.skipped" && e.event.correlationId === id,
    );
    const runs = all.filter(
      (e): e is StoredEvent<EventOf<"run.submitted">> =>
        e.event.type === "run.submitted" && e.event.data.schedule?.scheduleId === id,
    );
    return { fired, skipped, runs };
  };
  const create = async (body: object) => {
    const r = await api("POST", "/v1/schedules", { dag: validDag, ...body });
    expect(r.statusCode, r.body).toBe(201);
    return r.json() as { scheduleId: string };
  };
  /** Marks a run ended, as admission would: the scheduler's overlap view follows run terminal events. */
  const complete = async (sharedRunId: string) => {
    const ref = runRef(acme, sharedRunId);
    const e = buildEvent(
      "run.cancelled",
      { reason: "test ends it" },
      { tenantId: acme, correlationId: sharedRunId, causationId: "test", writer: { service: "test", instanceId: "t" } },
      { eventId: `ev-${sharedRunId.slice(0, 40)}-end`, now: new Date() },
    );
    await fx.store.append(ref, e, { expectedSeq: await fx.store.lastSeq(ref) });
  };

  it("two replicas, each stopped and restarted in turn, start exactly one run per nominal second, each atomic with its fire", async () => {
    await startOne("sched-a");
    await startOne("sched-b");
    const { scheduleId } = await create({
      scheduleId: "every-second",
      spec: { intervalMs: 1000 },
      overlap: "allow-all",
      catchUpMs: 10_000,
    });
    for (let round = 0; round < 4; round++) {
      await new Promise((r) => setTimeout(r, 1500));
      const victim = schedulers.splice(round % 2, 1)[0]!;
      await victim.stop();
      schedulers.splice(round % 2, 0, await startOne(`sched-${round}`));
    }
    await new Promise((r) => setTimeout(r, 1500));
    await api("POST", `/v1/schedules/${scheduleId}/pause`);
    const { fired, runs } = await events(scheduleId);
    const nominals = fired.map((f) => Date.parse(f.event.data.nominalAt));
    expect(new Set(nominals).size).toBe(nominals.length); // none twice
    expect(nominals.length).toBeGreaterThanOrEqual(6);
    // Consecutive seconds from the creation: none skipped inside the catch-up window.
    nominals.forEach((n, i) => i > 0 && expect(n - nominals[i - 1]!).toBe(1000));
    expect(runs.map((r) => r.event.data.schedule!.nominalAt)).toEqual(fired.map((f) => f.event.data.nominalAt));
    for (const [i, r] of runs.entries()) {
      expect(r.event.data).toMatchObject({
        source: "schedule",
        idempotencyKey: `schedule:${scheduleId}:${fired[i]!.event.data.nominalAt}`,
      });
      expect(r.event.data.sharedRunId).toBe(fired[i]!.event.data.sharedRunId);
      expect(r.seq).toBe(fired[i]!.seq + 1); // one atomic batch: the fire, then its run
    }
  }, 60_000);

  it("a pause that a fire overtakes between its read and its append is decided again on the new state: 200 paused, one pause event", async () => {
    if (schedulers.length === 0) await startOne("sched-race");
    const { scheduleId } = await create({ scheduleId: "raced", spec: { intervalMs: 1000 }, overlap: "allow-all" });
    await eventually("a first fire", async () => (await events(scheduleId)).fired[0]);
    let overtaken = 0;
    beforeApiAppend = async (event, expectedSeq) => {
      if (event.type !== "schedule.paused" || overtaken++ > 0) return;
      // The real scheduler fires next second: wait until its fire moved the schedule past what the API read.
      const ref = scheduleRef(acme, scheduleId);
      await eventually("a fire after the API's read", async () =>
        (await fx.store.read(ref, { skipUndecodable: true })).lastSeq > (expectedSeq ?? 0) ? true : undefined,
      );
    };
    try {
      const paused = await api("POST", `/v1/schedules/${scheduleId}/pause`);
      expect(paused.statusCode, paused.body).toBe(200);
      expect(paused.json()).toMatchObject({ status: "paused" });
    } finally {
      beforeApiAppend = undefined;
    }
    // The first append met the fire (a version conflict from JetStream); a later one landed.
    expect(overtaken).toBeGreaterThanOrEqual(2);
    const all: StoredEvent[] = [];
    await fx.store.replay({ seq: 1 }, (e) => void all.push(e), { filter: `${fx.layout.eventPrefix}.>` });
    const pauses = all.filter((e) => e.event.type === "schedule.paused" && e.event.correlationId === scheduleId);
    expect(pauses).toHaveLength(1);
    expect((await events(scheduleId)).fired.length).toBeGreaterThanOrEqual(2);
  }, 30_000);

  it("skip: while a fired run is open no other starts and each fire is recorded skipped; ending it lets the next fire start", async () => {
    if (schedulers.length === 0) await startOne("sched-skip");
    const { scheduleId } = await create({ scheduleId: "skipper", spec: { intervalMs: 1000 }, overlap: "skip" });
    const first = await eventually("a first fire", async () => (await events(scheduleId)).runs[0]);
    await eventually(
      "two overlap skips",
      async () => ((await events(scheduleId)).skipped.length >= 2 ? true : undefined),
      10_000,
    );
    expect((await events(scheduleId)).runs).toHaveLength(1);
    await complete(first.event.data.sharedRunId);
    await eventually(
      "a second run after the first ended",
      async () => ((await events(scheduleId)).runs.length === 2 ? true : undefined),
      10_000,
    );
    await api("POST", `/v1/schedules/${scheduleId}/pause`);
    const { skipped } = await events(scheduleId);
    expect(skipped.every((s) => s.event.data.reason === "overlap")).toBe(true);
  }, 60_000);

  it("a backfill of one hour of a per-minute schedule starts 60 runs with the right nominal times; a paused schedule fires nothing", async () => {
    if (schedulers.length === 0) await startOne("sched-bf");
    const { scheduleId } = await create({ scheduleId: "hourly-bf", spec: { cron: "0 * * * *", timezone: "UTC" } });
    await api("POST", `/v1/schedules/${scheduleId}/pause`);
    const bf = await api("POST", `/v1/schedules/${scheduleId}/backfill`, {
      from: "2026-11-01T00:00:00.000Z",
      to: "2026-11-03T11:59:59.000Z",
    });
    expect(bf.statusCode, bf.body).toBe(202);
    expect(bf.json().fires).toBe(60);
    await new Promise((r) => setTimeout(r, 1500));
    expect((await events(scheduleId)).fired).toHaveLength(0); // paused: the backfill waits too
    await api("POST", `/v1/schedules/${scheduleId}/resume`);
    await eventually(
      "60 backfill runs",
      async () => ((await events(scheduleId)).runs.length === 60 ? true : undefined),
      30_000,
    );
    const { runs } = await events(scheduleId);
    const expected = Array.from({ length: 60 }, (_, h) =>
      new Date(Date.parse("2026-11-01T00:00:00.000Z") + h * 3_600_000).toISOString(),
    );
    expect(runs.map((r) => r.event.data.schedule!.nominalAt)).toEqual(expected);
    const view = (await api("GET", `/v1/schedules/${scheduleId}`)).json();
    expect(view).toMatchObject({ status: "active", fired: 60 });
  }, 60_000);

  it("refuses what could never fire, an unknown zone and a reversed backfill with 400 schedule-invalid and writes nothing; tenants see only their own", async () => {
    const before = await fx.messageCount();
    for (const spec of [
      { cron: "0 0 30 2 *" },
      { cron: "0 0 * * *", timezone: "Mars/Olympus" },
      { cron: "not cron" },
    ]) {
      const r = await api("POST", "/v1/schedules", { dag: validDag, spec });
      expect([r.statusCode, r.json().error.code], r.body).toEqual([400, "schedule-invalid"]);
    }
    expect(
      (await api("POST", "/v1/schedules", { dag: validDag, spec: { intervalMs: 1000 } }, "operator")).statusCode,
    ).toBe(403);
    expect(await fx.messageCount()).toBe(before);
    const { scheduleId } = await create({ spec: { cron: "0 3 * * *", timezone: "Europe/Berlin" } });
    const reversed = await api("POST", `/v1/schedules/${scheduleId}/backfill`, {
      from: "2026-11-02T00:00:00.000Z",
      to: "2026-11-01T00:00:00.000Z",
    });
    expect([reversed.statusCode, reversed.json().error.code]).toEqual([400, "schedule-invalid"]);
    expect((await api("GET", `/v1/schedules/${scheduleId}`, undefined, "globex")).statusCode).toBe(404);
    expect((await api("GET", "/v1/schedules", undefined, "globex")).json().schedules).toEqual([]);
    const mine = (await api("GET", "/v1/schedules")).json().schedules.map((s: { scheduleId: string }) => s.scheduleId);
    expect(mine).toContain(scheduleId);
    expect((await api("DELETE", `/v1/schedules/${scheduleId}`)).json().status).toBe("deleted");
    expect(
      (await api("GET", "/v1/schedules")).json().schedules.map((s: { scheduleId: string }) => s.scheduleId),
    ).not.toContain(scheduleId);
  }, 60_000);
});
