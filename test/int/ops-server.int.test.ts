import { jetstream } from "@nats-io/jetstream";
import { connectHarness } from "../../platform/nats-auth/server-keys.ts";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { follow } from "../../platform/follow.ts";
import { startOpsServer, type OpsServer } from "../../platform/ops-server.ts";
import { eventually, freshStreams, type StreamsFixture } from "../support/streams.ts";

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

/**
 * The ops listener every service runs (platform/ops-server.ts) over a real nats-server: /healthz,
 * /readyz (NATS round trip, streams present, followers replayed and within the lag bound; a
 * degraded check never makes the process not-ready) and Prometheus /metrics.
 */
describe("ops listener (/healthz, /readyz, /metrics) against a real nats-server", () => {
  let fx: StreamsFixture;
  let ops: OpsServer;
  const log = pino({ level: "silent" });
  const get = async (path: string) => {
    const res = await fetch(`http://127.0.0.1:${ops.port}${path}`);
    const text = await res.text();
    return {
      status: res.status,
      text,
      json: (res.headers.get("content-type") ?? "").includes("json") ? (JSON.parse(text) as Json) : {},
    };
  };
  beforeAll(async () => {
    fx = await freshStreams(inject("natsUrl"), "ops");
    ops = await startOpsServer({
      service: "test-svc",
      instanceId: "i-1",
      log,
      nc: fx.nc,
      jsm: fx.jsm,
      layout: fx.layout,
      maxLag: 3,
    });
  });
  afterAll(async () => {
    await ops?.close();
    await fx?.close();
  });

  it("answers /healthz, and /readyz ready with NATS connected and the layout's streams present", async () => {
    expect(await get("/healthz")).toMatchObject({ status: 200, json: { status: "ok", service: "test-svc" } });
    const ready = await get("/readyz");
    expect(ready.status).toBe(200);
    expect(ready.json).toMatchObject({
      status: "ready",
      checks: { nats: { status: "ok" }, streams: { status: "ok" } },
    });
    expect(ready.json.checks.streams.detail).toContain(fx.layout.eventStream);
  });

  it("is not ready while a follower replays or lags beyond the bound, ready again once it caught up; /metrics shows the lag", async () => {
    const js = jetstream(fx.nc);
    const subject = `${fx.layout.eventPrefix}.probe.t.x.e`;
    for (let i = 0; i < 6; i++) await js.publish(subject, new TextEncoder().encode(`m${i}`));
    let release!: () => void;
    const gate = new Promise<void>((ok) => (release = ok));
    const follower = await follow(js, { stream: fx.layout.eventStream, filters: [subject] }, () => gate);
    try {
      const replaying = await get("/readyz");
      expect(replaying.status).toBe(503);
      expect(replaying.json.checks.followers).toMatchObject({ status: "failing" });
      expect(replaying.json.checks.followers.detail).toContain("replaying");
      const metrics = await get("/metrics");
      expect(metrics.text).toMatch(
        /drover_follower_lag_sequences\{stream="[^"]+",filter="[^"]+",service="test-svc"\} 6/,
      );
      expect(metrics.text).toContain('drover_nats_connected{service="test-svc"} 1');
      expect(metrics.text).toContain("process_cpu_user_seconds_total");
      release();
      await follower.caughtUp;
      const ready = await get("/readyz");
      expect(ready.status).toBe(200);
      expect(ready.json.checks.followers.detail).toContain("0 behind");
    } finally {
      release();
      await follower.stop();
    }
    expect((await get("/readyz")).json.checks.followers.detail).toBe("no followers");
  });

  it("reports a degraded check without becoming not-ready, and a failing one as not-ready", async () => {
    ops.addCheck("readModels", async () => ({ status: "degraded", detail: "MongoDB does not answer" }));
    const degraded = await get("/readyz");
    expect(degraded.status).toBe(200);
    expect(degraded.json.checks.readModels).toEqual({ status: "degraded", detail: "MongoDB does not answer" });
    ops.addCheck("readModels", async () => {
      throw new Error("boom");
    });
    expect((await get("/readyz")).status).toBe(503);
    ops.addCheck("readModels", async () => ({ status: "ok", detail: "" }));
  });

  it("is not ready once its NATS connection is closed (while /healthz still answers)", async () => {
    const nc = await connectHarness({ servers: inject("natsUrl") });
    const own = await startOpsServer({
      service: "closing",
      instanceId: "i-2",
      log,
      nc,
      jsm: fx.jsm,
      layout: fx.layout,
    });
    try {
      expect((await fetch(`http://127.0.0.1:${own.port}/readyz`)).status).toBe(200);
      await nc.close();
      const res = await eventually("not ready", async () => {
        const r = await fetch(`http://127.0.0.1:${own.port}/readyz`);
        return r.status === 503 ? ((await r.json()) as Json) : undefined;
      });
      expect(res.checks.nats).toEqual({ status: "failing", detail: "connection closed" });
      expect((await fetch(`http://127.0.0.1:${own.port}/healthz`)).status).toBe(200);
    } finally {
      await own.close();
    }
  });

  it("listens before its NATS connection is open: /healthz answers, /readyz is not ready until the connection is", async () => {
    let open: (v: { nc: Awaited<ReturnType<typeof connectHarness>> }) => void = () => undefined;
    const opened = new Promise<{ nc: Awaited<ReturnType<typeof connectHarness>> }>((ok) => (open = ok));
    const nc = opened.then((o) => o.nc);
    const own = await startOpsServer({
      service: "early",
      instanceId: "i-3",
      log,
      nc,
      jsm: nc.then(() => fx.jsm),
      layout: fx.layout,
    });
    try {
      expect((await fetch(`http://127.0.0.1:${own.port}/healthz`)).status).toBe(200);
      const before = await fetch(`http://127.0.0.1:${own.port}/readyz`);
      expect(before.status).toBe(503);
      const body = (await before.json()) as Json;
      expect(body.checks.nats).toEqual({ status: "failing", detail: "NATS connection not open yet" });
      expect(body.checks.streams).toEqual({ status: "failing", detail: "NATS connection not open yet" });
      open({ nc: await connectHarness({ servers: inject("natsUrl") }) });
      const ready = await eventually("ready", async () => {
        const r = await fetch(`http://127.0.0.1:${own.port}/readyz`);
        return r.status === 200 ? ((await r.json()) as Json) : undefined;
      });
      expect(ready.checks.nats.status).toBe("ok");
      await (await nc).close();
    } finally {
      await own.close();
    }
  });
});
