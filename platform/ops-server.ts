import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { JetStreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import type { Logger } from "pino";
import { collectDefaultMetrics, Gauge, Registry } from "prom-client";
import type { StreamLayout } from "../streams/layout.ts";
import { activeFollowers } from "./follow.ts";

/** One readiness check's answer: `degraded` is reported but never makes the process not-ready. */
export interface CheckResult {
  readonly status: "ok" | "degraded" | "failing";
  readonly detail: string;
}
export type ReadinessCheck = () => Promise<CheckResult>;

/** The small HTTP listener every service process runs: `/healthz`, `/readyz`, `/metrics`. */
export interface OpsServer {
  /** The process's metrics registry (default label `service`); services add their own metrics to it. */
  readonly registry: Registry;
  readonly port: number;
  addCheck(name: string, check: ReadinessCheck): void;
  close(): Promise<void>;
}

export interface OpsServerOptions {
  readonly service: string;
  readonly instanceId: string;
  readonly log: Logger;
  /** A connection still being opened may be given: until it is, the `nats` and `streams` checks fail ("connecting"). */
  readonly nc: NatsConnection | Promise<NatsConnection>;
  readonly jsm: JetStreamManager | Promise<JetStreamManager>;
  readonly layout: StreamLayout;
  /** DROVER_OPS_HOST / DROVER_OPS_PORT by default: 127.0.0.1 and a free port. */
  readonly host?: string;
  readonly port?: number;
  /** A follower more than this many stream sequences behind its filters' last message is not ready (DROVER_READY_MAX_LAG, default 1000). */
  readonly maxLag?: number;
}

const CHECK_TIMEOUT_MS = 2_000;

function within<T>(ms: number, p: Promise<T>): Promise<T> {
  let timer: ReturnType<typeof setTimeout>;
  return Promise.race([
    p,
    new Promise<T>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}

/** The highest sequence among the filters' last messages in `stream` (0 when none). */
async function lastMatching(jsm: JetStreamManager, stream: string, filters: readonly string[]): Promise<number> {
  let last = 0;
  for (const f of filters) {
    const m = await jsm.direct.getMessage(stream, { last_by_subj: f }).catch(() => null);
    last = Math.max(last, m?.seq ?? 0);
  }
  return last;
}

/** A value, or what a promise of it resolved to once it has (undefined before, and if it failed). */
function whenSettled<T extends object>(v: T | Promise<T>): () => T | undefined {
  if (!(v instanceof Promise)) return () => v;
  let got: T | undefined;
  v.then(
    (x) => void (got = x),
    () => undefined,
  );
  return () => got;
}

const connecting: CheckResult = { status: "failing", detail: "NATS connection not open yet" };

/**
 * Starts the ops listener. Readiness = NATS answers a round trip, the layout's streams exist, and
 * every follower of the process (platform/follow.ts) has replayed what was stored at its start and
 * is at most `maxLag` sequences behind its filters' last message; services add checks of their own
 * (a read-model store is added as `degraded`, never `failing`). Metrics: process defaults, NATS
 * connection, follower lag, and whatever the service registers.
 */
export async function startOpsServer(o: OpsServerOptions): Promise<OpsServer> {
  const registry = new Registry();
  registry.setDefaultLabels({ service: o.service });
  collectDefaultMetrics({ register: registry });
  const maxLag = o.maxLag ?? Number(process.env.DROVER_READY_MAX_LAG ?? 1000);
  const checks = new Map<string, ReadinessCheck>();
  const ncNow = whenSettled(o.nc);
  const jsmNow = whenSettled(o.jsm);

  checks.set("nats", async () => {
    const nc = ncNow();
    if (!nc) return connecting;
    if (nc.isClosed()) return { status: "failing", detail: "connection closed" };
    await within(CHECK_TIMEOUT_MS, nc.flush());
    return { status: "ok", detail: `connected to ${nc.getServer()}` };
  });
  checks.set("streams", async () => {
    const jsm = jsmNow();
    if (!jsm) return connecting;
    const names = [o.layout.eventStream, o.layout.heartbeatStream];
    const infos = await within(CHECK_TIMEOUT_MS, Promise.all(names.map((n) => jsm.streams.info(n))));
    return { status: "ok", detail: infos.map((i) => `${i.config.name} last ${i.state.last_seq}`).join(", ") };
  });
  checks.set("followers", async () => {
    const out: string[] = [];
    let status: CheckResult["status"] = "ok";
    for (const f of activeFollowers()) {
      const name = `${f.stream} ${f.filters.join(",")}`;
      if (f.failed) {
        status = "failing";
        out.push(`${name}: stopped (${f.failed})`);
        continue;
      }
      if (!f.caughtUp) {
        status = "failing";
        out.push(`${name}: replaying (at ${f.handledSeq})`);
        continue;
      }
      const jsm = jsmNow();
      if (!jsm) return connecting;
      const lag = Math.max(0, (await within(CHECK_TIMEOUT_MS, lastMatching(jsm, f.stream, f.filters))) - f.handledSeq);
      if (lag > maxLag) status = "failing";
      out.push(`${name}: ${lag} behind`);
    }
    return { status, detail: out.length ? out.join("; ") : "no followers" };
  });

  new Gauge({
    name: "drover_nats_connected",
    help: "1 while the NATS connection is open",
    registers: [registry],
    collect() {
      this.set(ncNow()?.isClosed() === false ? 1 : 0);
    },
  });
  new Gauge({
    name: "drover_follower_lag_sequences",
    help: "stream sequences between a follower's last handled message and its filters' last message",
    labelNames: ["stream", "filter"],
    registers: [registry],
    async collect() {
      this.reset();
      const jsm = jsmNow();
      for (const f of activeFollowers()) {
        const last = jsm ? await lastMatching(jsm, f.stream, f.filters).catch(() => f.handledSeq) : f.handledSeq;
        this.set({ stream: f.stream, filter: f.filters.join(",") }, Math.max(0, last - f.handledSeq));
      }
    },
  });

  const readiness = async () => {
    const results: Record<string, CheckResult> = {};
    await Promise.all(
      [...checks].map(async ([name, check]) => {
        results[name] = await check().catch((e: unknown) => ({ status: "failing" as const, detail: String(e) }));
      }),
    );
    const ready = Object.values(results).every((r) => r.status !== "failing");
    return { ready, body: { status: ready ? "ready" : "not-ready", service: o.service, checks: results } };
  };

  const server: Server = createServer((req, res) => {
    const json = (code: number, body: unknown) =>
      res.writeHead(code, { "content-type": "application/json" }).end(JSON.stringify(body));
    const path = (req.url ?? "/").split("?")[0];
    if (req.method !== "GET") return json(405, { error: "GET only" });
    if (path === "/healthz") return json(200, { status: "ok", service: o.service, instanceId: o.instanceId });
    if (path === "/readyz")
      return void readiness().then(
        (r) => json(r.ready ? 200 : 503, r.body),
        (e: unknown) => json(503, { status: "not-ready", error: String(e) }),
      );
    if (path === "/metrics")
      return void registry.metrics().then(
        (text) => res.writeHead(200, { "content-type": registry.contentType }).end(text),
        (e: unknown) => json(500, { error: String(e) }),
      );
    return json(404, { error: `no route ${path}` });
  });
  const host = o.host ?? process.env.DROVER_OPS_HOST ?? "127.0.0.1";
  const port = o.port ?? Number(process.env.DROVER_OPS_PORT ?? 0);
  await new Promise<void>((ok, fail) => {
    server.once("error", fail);
    server.listen(port, host, () => ok());
  });
  const bound = (server.address() as AddressInfo).port;
  o.log.info({ opsPort: bound, opsHost: host }, "ops listener: /healthz /readyz /metrics");
  return {
    registry,
    port: bound,
    addCheck: (name, check) => void checks.set(name, check),
    close: () =>
      new Promise<void>((ok) => {
        server.closeAllConnections();
        server.close(() => ok());
      }),
  };
}
