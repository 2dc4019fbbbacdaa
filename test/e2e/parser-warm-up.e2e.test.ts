import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { startControlPlane, type ControlPlane } from "../../platform/control-plane-processes.ts";
import { eventTypesOf } from "../../platform/parser-warm-up.ts";
import { eventually } from "../support/streams.ts";

/**
 * Admission, capacity and the provisioner, as real processes on a real nats-server and Redis, compile
 * the event parsers of what they fold and append once caught up, as recovery does its incident
 * parsers: a fresh process compiled each schema at its first use, and most of a loss's events (a
 * runtime's exit, suspicion and fence; a run requeued for resume, its resumed start and end) are first
 * met during the recovery, on the path its resume waits for (P=5 proof, session 33: ~60 ms of the
 * provisioner's, ~35 ms of capacity's and ~170 ms of admission's main thread in the kill window).
 */
describe("event parser warm-up of the control plane's services (real processes, nats-server, Redis)", () => {
  const DB = 5;
  let cp: ControlPlane;
  beforeAll(async () => {
    const redis = new Redis(inject("redisUrl"), { db: DB });
    await redis.flushdb();
    redis.disconnect();
    cp = await startControlPlane({
      natsUrl: inject("natsUrl"),
      redisUrl: `${inject("redisUrl")}/${DB}`,
      services: ["admission", "capacity", "provisioner"],
      config: {
        controlPlaneId: "cp-parser-warm-up",
        tenants: [{ tenantId: "t-warm", isolationMode: "dedicated" }],
      },
    });
  });
  afterAll(async () => {
    await cp?.stop();
  });

  const compiled = async (service: string) => {
    const log = await readFile(join(cp.logDir, `${service}.log`), "utf8").catch(() => "");
    const line = log
      .split("\n")
      .filter((l) => l.includes('"event parsers compiled"'))
      .at(0);
    return line ? (JSON.parse(line) as { schemas: number; aggregates: string[] }) : undefined;
  };

  it.each([
    ["admission", ["run", "scaleout"]],
    ["capacity", ["runtime"]],
    ["provisioner", ["runtime", "scaleout", "quota", "worker"]],
  ])("%s compiles the parsers of every event of its aggregates once caught up", async (service, aggregates) => {
    const line = await eventually(`${service} logging its parsers compiled`, () => compiled(service), 60_000);
    expect(line.aggregates).toEqual(aggregates);
    expect(line.schemas).toBe(eventTypesOf(aggregates).length);
    expect(line.schemas).toBeGreaterThan(aggregates.length);
  });
});
