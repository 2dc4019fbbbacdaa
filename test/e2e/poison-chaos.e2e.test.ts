import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { type NatsConnection } from "@nats-io/transport-node";
import { connectHarness } from "../../platform/nats-auth/server-keys.ts";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import type { DroverEvent } from "../../contracts/index.ts";
import { apiClient, chainDag } from "../../platform/api-client.ts";
import { startControlPlane, type ControlPlane, type ServiceName } from "../../platform/control-plane-processes.ts";
import { controlSubject } from "../../platform/control-subject.ts";
import { createEventStore, readDeadLetters, type StoredEvent } from "../../streams/index.ts";
import { poisonAggregate, poisonHeartbeats, poisonRequests, type PoisonMessage } from "../support/poison.ts";
import { eventually } from "../support/streams.ts";

/**
 * Poison-proof services (every service a real process, real process hosts, real nats-server,
 * FerretDB and Redis): garbage — not JSON, unknown types, known types with wrong or extra fields,
 * newer schema versions, ~900 KB payloads — published straight into JetStream on every subject class
 * the services consume (every event type of run, exec, scaleout, runtime and forensics, on live and
 * made-up aggregates; heartbeats of a live and a made-up runtime; the capacity and forensics control
 * requests) while runs flow. Every service stays up, every GET route of the API answers below 500,
 * every bad event is in the dead-letter record, and the runs in flight and a fresh one complete
 * exactly once.
 */
const TENANT = "t-chaos";
const TOKEN = "token-tenant-chaos-00001";
const OPS_TOKEN = "token-operator-chaos-001";
const SERVICES: ServiceName[] = ["capacity", "recovery", "provisioner", "admission", "forensics", "api"];

async function opsPort(cp: ControlPlane, service: ServiceName): Promise<number> {
  const log = await readFile(join(cp.logDir, `${service}.log`), "utf8");
  const ports = [...log.matchAll(/"opsPort":(\d+)/g)].map((m) => Number(m[1]));
  if (ports.length === 0) throw new Error(`${service} logged no ops port`);
  return ports.at(-1)!;
}

/**
 * GETs `path`; a Server-Sent Events answer is read until its `caught-up` frame (the feed got past
 * every poisoned message) or 60 s, then closed.
 */
async function probe(url: string, token: string): Promise<{ status: number; text: string; caughtUp?: boolean }> {
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(), 60_000);
  try {
    const res = await fetch(url, { headers: { authorization: `Bearer ${token}` }, signal: abort.signal });
    if (!(res.headers.get("content-type") ?? "").includes("text/event-stream"))
      return { status: res.status, text: await res.text() };
    const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
    let text = "";
    for (;;) {
      const { value, done } = await reader.read().catch(() => ({ value: undefined, done: true }));
      if (done) return { status: res.status, text, caughtUp: false };
      text += value;
      if (text.includes("event: caught-up")) return { status: res.status, text: text.slice(-300), caughtUp: true };
    }
  } finally {
    clearTimeout(timer);
    abort.abort();
  }
}

describe("garbage on every consumed subject class while runs flow (all services real)", () => {
  let cp: ControlPlane;
  let nc: NatsConnection;
  beforeAll(async () => {
    const redis = new Redis(inject("redisUrl"), { db: 9 });
    await redis.flushdb();
    redis.disconnect();
    cp = await startControlPlane({
      natsUrl: inject("natsUrl"),
      redisUrl: `${inject("redisUrl")}/9`,
      mongoUrl: inject("mongoUrl"),
      services: SERVICES,
      config: {
        controlPlaneId: "cp-poison",
        heartbeatIntervalMs: 250,
        dispatchTimeoutMs: 2000,
        tenants: [{ tenantId: TENANT, isolationMode: "dedicated", maxRuntimeInstances: 2, workersPerInstance: 2 }],
        tokens: { [TOKEN]: { role: "tenant", tenantId: TENANT }, [OPS_TOKEN]: { role: "operator", name: "ops" } },
      },
    });
    nc = await connectHarness({ servers: inject("natsUrl") });
  }, 240_000);
  afterAll(async () => {
    await nc?.close();
    await cp?.stop();
  });

  it("every service stays up, no GET answers 5xx, every bad event is dead-lettered, runs complete exactly once", async () => {
    const api = apiClient(cp.apiUrl, TOKEN);
    const ops = apiClient(cp.apiUrl, OPS_TOKEN);
    const completed = (id: string) =>
      eventually(
        `run ${id} completed`,
        async () => ((await api.run(id)).body?.status === "completed" ? true : undefined),
        90_000,
      );
    // A finished run and a live runtime to poison, then runs in flight while the garbage lands.
    const first = (await api.submit(chainDag(3, 10), "chaos-first")).body.sharedRunId as string;
    await completed(first);
    const store = createEventStore(nc, cp.layout);
    const firstEvents = (await store.read({ aggregate: "run", tenantId: TENANT, id: first })).events;
    const started = firstEvents.find((e) => e.event.type === "run.started")!.event as DroverEvent;
    const executionId = started.type === "run.started" ? started.data.executionId : "";
    const runtimeId = started.type === "run.started" ? started.data.runtimeInstanceId : "";
    const flowing: string[] = [];
    for (let i = 0; i < 6; i++) flowing.push((await api.submit(chainDag(8, 40), `chaos-flow-${i}`)).body.sharedRunId);

    const L = cp.layout;
    const events: PoisonMessage[] = [
      ...poisonAggregate(L, { aggregate: "run", tenantId: TENANT, id: first }),
      ...poisonAggregate(L, { aggregate: "run", tenantId: TENANT, id: "chaos-run" }),
      ...poisonAggregate(L, { aggregate: "exec", tenantId: TENANT, id: executionId }),
      ...poisonAggregate(L, { aggregate: "exec", tenantId: TENANT, id: "chaos-exec" }),
      ...poisonAggregate(L, { aggregate: "scaleout", tenantId: TENANT, id: "chaos-so" }),
      ...poisonAggregate(L, { aggregate: "runtime", id: runtimeId }),
      ...poisonAggregate(L, { aggregate: "runtime", id: "chaos-rt" }),
      ...poisonAggregate(L, { aggregate: "forensics", tenantId: TENANT, id: "chaos-fx" }),
    ];
    const beats = [...poisonHeartbeats(L, runtimeId), ...poisonHeartbeats(L, "chaos-rt")];
    const js = jetstream(nc);
    const poisonedSeqs: number[] = [];
    for (const m of events) poisonedSeqs.push((await js.publish(m.subject, m.bytes)).seq);
    for (const m of beats) await js.publish(m.subject, m.bytes);
    const requests = ["capacity", "forensics"].flatMap((s) =>
      poisonRequests(controlSubject(L, "cp-poison", s, "rebuild")),
    );
    for (const m of requests) {
      const reply = await nc.request(m.subject, m.bytes, { timeout: 60_000 });
      expect(reply.json<{ ok: boolean }>(), `${m.subject} ${m.variant}`).toHaveProperty("ok");
    }

    // Every bad event is in the dead-letter record: forensics folds every event of the stream.
    const jsm = await jetstreamManager(nc);
    await eventually(
      "every poisoned sequence dead-lettered by forensics",
      async () => {
        const seen = new Set(
          (await readDeadLetters(jsm, L)).filter((d) => d.consumer === "forensics").map((d) => d.streamSeq),
        );
        return poisonedSeqs.every((s) => seen.has(s)) ? true : undefined;
      },
      60_000,
    );

    const fresh = (await api.submit(chainDag(3, 10), "chaos-fresh")).body.sharedRunId as string;
    for (const id of [...flowing, fresh]) await completed(id);

    // Every service is still up.
    for (const s of SERVICES.filter((s) => s !== "api")) {
      const res = await fetch(`http://127.0.0.1:${await opsPort(cp, s)}/healthz`);
      expect(res.status, s).toBe(200);
    }
    expect((await fetch(`${cp.apiUrl}/healthz`)).status).toBe(200);

    // Every GET route of the API (from its OpenAPI document) answers below 500, for both roles,
    // on the poisoned finished run, the made-up poisoned run and a fresh one.
    const spec = (await ops.get("/v1/openapi.json")).body as { paths: Record<string, Record<string, unknown>> };
    const routes = Object.entries(spec.paths)
      .filter(([, methods]) => "get" in methods)
      .map(([p]) => p);
    expect(routes.length).toBeGreaterThan(8);
    const answers: string[] = [];
    for (const route of routes)
      for (const id of [first, "chaos-run", fresh, "inc-chaos"])
        for (const token of [TOKEN, OPS_TOKEN]) {
          const query = token === OPS_TOKEN && route.includes("runs") ? `?tenant=${TENANT}` : "";
          const path = route.replace(/\{[^}]+\}/g, id) + query;
          const r = await probe(`${cp.apiUrl}${path}`, token);
          answers.push(`${r.status} ${path}`);
          expect(r.status, `${path}: ${r.text.slice(0, 500)}`).toBeLessThan(500);
          if (r.caughtUp !== undefined) expect(r.caughtUp, `${path} reached caught-up`).toBe(true);
        }
    // The poisoned finished run still reads as completed, and says which of its events it could not read.
    const detail = (await api.run(first)).body;
    expect(detail.status).toBe("completed");
    expect(detail.unreadableEvents.length).toBeGreaterThan(0);
    expect(detail.steps.every((s: { state: string }) => s.state === "completed")).toBe(true);

    // Exactly once: one run.completed per run, never a second start.
    const log: StoredEvent[] = [];
    let skipped = 0;
    await store.replay({ seq: 1 }, (e) => void log.push(e), { onUndecodable: () => void (skipped += 1) });
    expect(skipped).toBe(poisonedSeqs.length);
    for (const id of [first, ...flowing, fresh]) {
      const of = (t: string) => log.filter((e) => e.event.type === t && e.subject.includes(`.${id}.`));
      expect(of("run.completed"), id).toHaveLength(1);
      expect(of("run.started"), id).toHaveLength(1);
    }
    console.log(
      JSON.stringify({
        poisonEvents: events.length,
        poisonHeartbeats: beats.length,
        requests: requests.length,
        getCalls: answers.length,
      }),
    );
  }, 300_000);
});
