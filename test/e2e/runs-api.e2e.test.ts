import { execFile } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import type { DagInput } from "../../contracts/index.ts";
import { startControlPlane, type ControlPlane } from "../../platform/control-plane-processes.ts";
import { eventually } from "../support/streams.ts";

/**
 * Finding, following, cancelling and rerunning runs through the HTTP API, with every service a
 * real process (api, admission, capacity, provisioner, recovery, forensics), real process runtimes,
 * real nats-server, Redis and FerretDB. Cancel is proven in the three places a run can be: queued
 * globally (admission ends it), queued on a runtime (dispatched, not started) and running a step
 * (the runtime aborts it).
 */
const RUN_TOKEN = "token-tenant-runs-000001";
const NONE_TOKEN = "token-tenant-none-000001";
const OPS_TOKEN = "token-operator-runs-0001";
const REDIS_DB = 11;
/** How long one CLI process may take before execFile kills it (a hung CLI fails its call, not the test's timer). */
const CLI_CALL_MS = 60_000;

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const sleepChain = (n: number, ms: number): DagInput => ({
  name: `sleep-${n}`,
  steps: Array.from({ length: n }, (_, i) => ({
    id: `s${i + 1}`,
    kind: "sleep" as const,
    dependsOn: i === 0 ? [] : [`s${i}`],
    params: { durationMs: ms },
  })),
});

interface Frame {
  id?: string;
  event: string;
  data: Json;
}

async function readSse(
  url: string,
  headers: Record<string, string>,
  until?: (f: Frame[]) => boolean,
): Promise<Frame[]> {
  const abort = new AbortController();
  const res = await fetch(url, { headers: { ...headers, accept: "text/event-stream" }, signal: abort.signal });
  expect(res.status).toBe(200);
  expect(res.headers.get("content-type")).toContain("text/event-stream");
  const frames: Frame[] = [];
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
  let buf = "";
  try {
    for (;;) {
      if (until?.(frames)) break;
      const { value, done } = await reader.read();
      if (done) break;
      buf += value;
      for (let i = buf.indexOf("\n\n"); i >= 0; i = buf.indexOf("\n\n")) {
        const raw = buf.slice(0, i);
        buf = buf.slice(i + 2);
        const field = (n: string) =>
          raw
            .split("\n")
            .find((l) => l.startsWith(`${n}: `))
            ?.slice(n.length + 2);
        const data = field("data");
        if (data !== undefined)
          frames.push({ id: field("id"), event: field("event") ?? "message", data: JSON.parse(data) });
      }
    }
  } finally {
    abort.abort();
  }
  return frames;
}

describe("runs API: list, detail with steps, per-run live feed, cancel and rerun (all services real)", () => {
  let cp: ControlPlane;
  let redis: Redis;
  const call = async (token: string, method: string, path: string, body?: unknown) => {
    const res = await fetch(`${cp.apiUrl}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${token}`,
        ...(body === undefined ? {} : { "content-type": "application/json" }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await res.text();
    return { status: res.status, headers: res.headers, body: (text ? JSON.parse(text) : undefined) as Json };
  };
  const runs = (method: string, path: string, body?: unknown) => call(RUN_TOKEN, method, path, body);
  const statusIs = (token: string, id: string, status: string, timeoutMs = 60_000) =>
    eventually(
      `run ${id} ${status}`,
      async () => {
        const r = await call(token, "GET", `/v1/runs/${id}`);
        return r.body?.status === status ? r.body : undefined;
      },
      timeoutMs,
    );

  beforeAll(async () => {
    redis = new Redis(inject("redisUrl"), { db: REDIS_DB });
    await redis.flushdb();
    cp = await startControlPlane({
      natsUrl: inject("natsUrl"),
      redisUrl: `${inject("redisUrl")}/${REDIS_DB}`,
      mongoUrl: inject("mongoUrl"),
      services: ["capacity", "recovery", "provisioner", "admission", "forensics", "api"],
      config: {
        controlPlaneId: "cp-runs",
        heartbeatIntervalMs: 250,
        dispatchTimeoutMs: 2000,
        tenants: [
          {
            tenantId: "t-runs",
            isolationMode: "dedicated",
            maxRuntimeInstances: 1,
            workersPerInstance: 1,
            maxConcurrentRunsPerInstance: 1,
            localQueueCapacity: 4,
            transport: "http",
          },
          // may not start a runtime and may not use shared capacity: its runs stay queued globally
          { tenantId: "t-none", isolationMode: "hybrid", allowSharedFallback: false, maxRuntimeInstances: 0 },
        ],
        tokens: {
          [RUN_TOKEN]: { role: "tenant", tenantId: "t-runs" },
          [NONE_TOKEN]: { role: "tenant", tenantId: "t-none" },
          [OPS_TOKEN]: { role: "operator", name: "ops" },
        },
      },
    });
  }, 120_000);
  afterAll(async () => {
    await cp?.stop();
    redis?.disconnect();
  });

  it("shows a completed run's steps, follows it live from its first event to `end`, resumes by Last-Event-ID, and reruns it linked both ways", async () => {
    const sub = await runs("POST", "/v1/runs", { dag: sleepChain(3, 20), labels: { team: "blue" } });
    expect(sub.status).toBe(201);
    expect(sub.headers.get("x-request-id")).toBeTruthy();
    const id = sub.body.sharedRunId as string;
    const live = await readSse(`${cp.apiUrl}/v1/runs/${id}/events`, { authorization: `Bearer ${RUN_TOKEN}` });
    const events = live.filter((f) => f.event === "message").map((f) => f.data);
    expect(events[0]!.event.type).toBe("run.submitted");
    expect(events.filter((e) => e.event.type === "exec.step-completed").map((e) => e.event.data.stepId)).toEqual([
      "s1",
      "s2",
      "s3",
    ]);
    expect(events.at(-1)!.event.type).toBe("run.completed");
    expect(live.at(-1)).toMatchObject({ event: "end", data: { status: "completed" } });
    // resumed after the second event: exactly the later ones
    const resumed = await readSse(`${cp.apiUrl}/v1/runs/${id}/events`, {
      authorization: `Bearer ${RUN_TOKEN}`,
      "last-event-id": String(events[1]!.seq),
    });
    expect(resumed.filter((f) => f.event === "message").map((f) => f.data.seq)).toEqual(
      events.slice(2).map((e) => e.seq),
    );

    const detail = (await runs("GET", `/v1/runs/${id}`)).body;
    expect(detail.status).toBe("completed");
    expect(detail.labels).toEqual({ team: "blue" });
    expect(detail.steps.map((s: Json) => [s.id, s.state, s.attempts])).toEqual([
      ["s1", "completed", 1],
      ["s2", "completed", 1],
      ["s3", "completed", 1],
    ]);
    expect(detail.steps.every((s: Json) => s.durationMs >= 20)).toBe(true);

    const again = await runs("POST", `/v1/runs/${id}/rerun`);
    expect(again.status).toBe(201);
    const rerunId = again.body.sharedRunId as string;
    expect(rerunId).not.toBe(id);
    expect(again.body.dag).toEqual(detail.dag);
    const rerun = await statusIs(RUN_TOKEN, rerunId, "completed");
    expect(rerun.rerunOf).toBe(id);
    expect(rerun.labels).toEqual({ team: "blue" });
    const listed = await eventually("the original lists its rerun", async () => {
      const l = await runs("GET", "/v1/runs?label=team=blue&limit=10");
      const original = (l.body.runs as Json[]).find((r) => r.sharedRunId === id);
      // the read model catches up with the stream: wait for both runs, not only the link
      return original?.reruns.includes(rerunId) && l.body.runs.length === 2 ? l.body : undefined;
    });
    expect((listed.runs as Json[]).map((r) => r.sharedRunId)).toEqual([rerunId, id]);
    // a finished run cannot be cancelled, and says how it ended
    const late = await runs("POST", `/v1/runs/${id}/cancel`, {});
    expect(late.status).toBe(409);
    expect(late.body.error).toMatchObject({ code: "run-terminal", details: { status: "completed" } });
    expect(late.body.error.requestId).toBe(late.headers.get("x-request-id"));
  });

  it("lists newest first with cursor paging, status and label filters, and confines the list to the caller's tenant", async () => {
    const ids: string[] = [];
    for (let i = 0; i < 5; i++)
      ids.push(
        (await runs("POST", "/v1/runs", { dag: sleepChain(1, 1), labels: { batch: "b1", n: String(i) } })).body
          .sharedRunId,
      );
    for (const id of ids) await statusIs(RUN_TOKEN, id, "completed");
    const newest = [...ids].reverse();
    const all = await eventually("the list shows the batch", async () => {
      const l = await runs("GET", "/v1/runs?label=batch=b1&limit=100");
      return l.body.runs?.length === 5 ? l.body : undefined;
    });
    expect(all.runs.map((r: Json) => r.sharedRunId)).toEqual(newest);
    expect(all.next).toBeUndefined();
    const pages: string[] = [];
    let cursor: string | undefined;
    do {
      const p = await runs("GET", `/v1/runs?label=batch=b1&limit=2${cursor ? `&cursor=${cursor}` : ""}`);
      expect(p.status).toBe(200);
      pages.push(...p.body.runs.map((r: Json) => r.sharedRunId));
      cursor = p.body.next;
    } while (cursor !== undefined);
    expect(pages).toEqual(newest);
    // the read model applies the completions after the list first showed the runs
    const filtered = await eventually("the filtered list", async () => {
      const f = await runs("GET", "/v1/runs?label=batch=b1&label=n=3&status=completed");
      return f.body.runs.length === 1 ? f.body : undefined;
    });
    expect(filtered.runs.map((r: Json) => r.sharedRunId)).toEqual([ids[3]]);
    expect((await runs("GET", "/v1/runs?label=batch=b1&status=failed")).body.runs).toEqual([]);
    expect((await call(NONE_TOKEN, "GET", "/v1/runs?label=batch=b1")).body.runs).toEqual([]);
    expect(
      (await call(OPS_TOKEN, "GET", "/v1/runs?tenant=t-runs&label=batch=b1&limit=1")).body.runs[0].sharedRunId,
    ).toBe(ids[4]);
  });

  it("cancels a run queued globally without a runtime: admission ends it cancelled once, with who and why, and holds nothing for it", async () => {
    const id = (await call(NONE_TOKEN, "POST", "/v1/runs", { dag: sleepChain(1, 1) })).body.sharedRunId as string;
    await statusIs(NONE_TOKEN, id, "queued");
    const c = await call(NONE_TOKEN, "POST", `/v1/runs/${id}/cancel`, { reason: "not needed" });
    expect(c.status).toBe(202);
    expect(c.body.outcome).toBe("requested");
    const done = await statusIs(NONE_TOKEN, id, "cancelled");
    expect(done.cancelRequested).toMatchObject({ by: "tenant:t-none", reason: "not needed" });
    const again = await call(NONE_TOKEN, "POST", `/v1/runs/${id}/cancel`, {});
    expect([again.status, again.body.outcome]).toEqual([200, "cancelled"]);
    const events = (await call(NONE_TOKEN, "GET", `/v1/runs/${id}/events`)).body.events as Json[];
    const cancelled = events.filter((e) => e.event.type === "run.cancelled");
    expect(cancelled).toHaveLength(1);
    expect(cancelled[0]!.event.writer.service).toBe("admission");
    expect(cancelled[0]!.event.data).toEqual({ reason: "not needed", by: "tenant:t-none" });
    expect(events.some((e) => e.event.type === "run.admitted")).toBe(false);
    // another tenant cannot cancel it, nor see it
    expect((await runs("POST", `/v1/runs/${id}/cancel`, {})).status).toBe(404);
    // nothing reserved for it anywhere
    // Reservations are two sorted sets per runtime (platform/reservations.ts): held (`:e`) and accepted (`:a`).
    const keys = await redis.keys("drover:cp-runs:resv:*");
    for (const k of keys) expect(await redis.zscore(k, id)).toBeNull();
  });

  it("cancels a running run through the runtime (its step is aborted, no step completes after) and a run queued on that runtime (released before it starts)", async () => {
    const running = (await runs("POST", "/v1/runs", { dag: sleepChain(3, 30_000) })).body.sharedRunId as string;
    await statusIs(RUN_TOKEN, running, "started", 90_000);
    const queued = (await runs("POST", "/v1/runs", { dag: sleepChain(1, 1) })).body.sharedRunId as string;
    const q = await statusIs(RUN_TOKEN, queued, "dispatched");
    const runtime = q.placement.runtimeInstanceId as string;

    const cq = await runs("POST", `/v1/runs/${queued}/cancel`, { reason: "queued one" });
    expect(cq.status).toBe(202);
    await statusIs(RUN_TOKEN, queued, "cancelled");
    const qEvents = ((await runs("GET", `/v1/runs/${queued}/events`)).body.events as Json[]).map((e) => e.event.type);
    expect(qEvents.filter((t) => t === "run.cancelled")).toHaveLength(1);
    expect(qEvents).not.toContain("run.started");
    // Held until a heartbeat shows the run (3 intervals after dispatch) unless released: the cancel released it.
    for (const set of ["e", "a"])
      expect(await redis.zscore(`drover:cp-runs:resv:${runtime}:${set}`, queued)).toBeNull();

    const follow = readSse(`${cp.apiUrl}/v1/runs/${running}/events`, { authorization: `Bearer ${RUN_TOKEN}` });
    const cr = await runs("POST", `/v1/runs/${running}/cancel`, { reason: "running one" });
    expect([cr.status, cr.body.outcome]).toEqual([202, "requested"]);
    // Idempotent: a second request adds no event. By the time it arrives the runtime may already have
    // cancelled the run (a fresh-clone run saw it within one round trip), so either answer is right.
    const again = await runs("POST", `/v1/runs/${running}/cancel`, {});
    expect([
      [202, "already-requested"],
      [200, "cancelled"],
    ]).toContainEqual([again.status, again.body.outcome]);
    const frames = await follow; // ends by itself at the run's terminal event
    expect(frames.at(-1)).toMatchObject({ event: "end", data: { status: "cancelled" } });
    const types = frames.filter((f) => f.event === "message").map((f) => f.data.event.type as string);
    expect(types.filter((t) => t === "run.cancelled")).toHaveLength(1);
    expect(types.filter((t) => t === "run.cancel-requested")).toHaveLength(1);
    expect(types).toContain("exec.cancelled");
    expect(types.indexOf("exec.cancelled")).toBeLessThan(types.indexOf("run.cancelled"));
    expect(types.slice(types.indexOf("run.cancel-requested")).includes("exec.step-completed")).toBe(false);
    const detail = (await runs("GET", `/v1/runs/${running}`)).body;
    expect(detail.status).toBe("cancelled");
    expect(detail.steps.map((s: Json) => s.state)).toEqual(["cancelled", "cancelled", "cancelled"]);
    // the runtime is free again: a new run completes on it
    const next = (await runs("POST", "/v1/runs", { dag: sleepChain(1, 1) })).body.sharedRunId as string;
    expect((await statusIs(RUN_TOKEN, next, "completed")).placement.runtimeInstanceId).toBe(runtime);
  }, 180_000);

  it("GET /v1/events?from=now&types= streams only later events of those types", async () => {
    const before = (await runs("POST", "/v1/runs", { dag: sleepChain(1, 1) })).body.sharedRunId as string;
    await statusIs(RUN_TOKEN, before, "completed");
    // submit once the feed is open and caught up (everything after it is live)
    let submitted: Promise<{ body: Json }> | undefined;
    const feed = readSse(
      `${cp.apiUrl}/v1/events?from=now&types=run.submitted,exec.*`,
      { authorization: `Bearer ${RUN_TOKEN}` },
      (f) => {
        if (!submitted && f.some((x) => x.event === "caught-up"))
          submitted = runs("POST", "/v1/runs", { dag: sleepChain(1, 1) });
        return f.some((x) => x.event === "message" && x.data.event.type === "exec.completed");
      },
    );
    const frameList = await feed;
    const after = (await submitted!).body.sharedRunId as string;
    const frames = frameList.filter((f) => f.event === "message").map((f) => f.data.event);
    expect(frames.every((e) => e.type === "run.submitted" || e.type.startsWith("exec."))).toBe(true);
    expect(frames[0]).toMatchObject({ type: "run.submitted", data: { sharedRunId: after } });
    expect(frames.some((e) => e.correlationId === before)).toBe(false);
  });

  it("the installed CLI (cli/bin.mjs, package.json bin) submits and waits with -o json, watches a run step by step, lists, cancels and reruns", async () => {
    const dir = await mkdtemp(join(tmpdir(), "drover-cli-"));
    const bin = resolve(import.meta.dirname, "../../cli/bin.mjs");
    const env = { ...process.env, DROVER_API_URL: cp.apiUrl, DROVER_TOKEN: RUN_TOKEN };
    const drover = async (...args: string[]) => {
      try {
        const r = await promisify(execFile)(process.execPath, [bin, ...args], { env, timeout: CLI_CALL_MS });
        return { code: 0, out: r.stdout, err: r.stderr };
      } catch (e) {
        const x = e as { code: number; stdout: string; stderr: string };
        return { code: x.code, out: x.stdout, err: x.stderr };
      }
    };
    try {
      await writeFile(join(dir, "dag.json"), JSON.stringify(sleepChain(2, 50)));
      const waited = await drover(
        "runs",
        "submit",
        "-f",
        join(dir, "dag.json"),
        "--label",
        "via=cli",
        "--wait",
        "-o",
        "json",
      );
      expect(waited.code).toBe(0);
      const run = JSON.parse(waited.out) as Json;
      expect(run).toMatchObject({ status: "completed", labels: { via: "cli" } });
      expect(run.steps.map((s: Json) => s.state)).toEqual(["completed", "completed"]);

      await writeFile(join(dir, "slow.json"), JSON.stringify(sleepChain(3, 300)));
      const slow = JSON.parse((await drover("runs", "submit", "-f", join(dir, "slow.json"), "-o", "json")).out) as Json;
      const watched = await drover("runs", "watch", slow.sharedRunId);
      expect(watched.code).toBe(0);
      const completions = watched.out.split("\n").filter((l) => l.includes("exec.step-completed"));
      expect(completions.map((l) => l.trim().split(/\s+/).at(-3))).toEqual(["s1", "s2", "s3"]);
      expect(watched.out).toMatch(/status\s+completed/);

      expect((await drover("runs", "get", "run-does-not-exist")).code).toBe(4);
      const listed = await drover("runs", "list", "--label", "via=cli");
      expect(listed.out).toContain(run.sharedRunId);
      const again = await drover("runs", "rerun", run.sharedRunId, "-o", "json");
      expect(JSON.parse(again.out).sharedRunId).not.toBe(run.sharedRunId);
      const late = await drover("runs", "cancel", run.sharedRunId);
      expect([late.code, late.err]).toEqual([2, expect.stringContaining("run-terminal")]);
      for (const args of [["--help"], ["runs", "--help"], ["runs", "watch", "--help"], ["admin", "replay", "--help"]])
        expect((await drover(...args)).code).toBe(0);
      expect((await drover("runs", "list", "--limit")).code).toBe(2);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
    // 12 CLI processes started one after another, each from the cached bundle (cli/bundle.mjs, ~0.07 s
    // of CPU for `--help`) or, where it cannot be built, through tsx: ~1.2 s of CPU, 5-18 s of wall time
    // at load 30 on 2 cores (`node cli/bin.mjs --help`, 2026-12-06). The
    // timeout is what the calls may take (12 × CLI_CALL_MS), not a window the machine must fit them in.
  }, 720_000);
});
