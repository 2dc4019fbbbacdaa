import { describe, expect, it } from "vitest";
import { parseRuntimeConfig } from "./runtime-config.ts";

const env = {
  DROVER_RUNTIME_INSTANCE_ID: "rt-t1-0001",
  DROVER_CONTROL_PLANE_ID: "cp1",
  DROVER_TENANT_ID: "t1",
  DROVER_WORKERS: "4",
  DROVER_MAX_CONCURRENT_RUNS: "2",
  DROVER_LOCAL_QUEUE_CAPACITY: "3",
  DROVER_MAX_WORKERS_PER_RUN: "2",
  DROVER_COMMAND_TOKEN: "0123456789abcdef0123",
  NATS_URL: "nats://127.0.0.1:4222",
  DROVER_TRANSPORT: "grpc",
  DROVER_PORT: "0",
};

describe("parseRuntimeConfig", () => {
  it("parses a complete environment and applies the documented defaults (bind 127.0.0.1, heartbeat 1000 ms)", () => {
    const r = parseRuntimeConfig(env);
    expect(r).toMatchObject({
      ok: true,
      config: {
        runtimeInstanceId: "rt-t1-0001",
        tenantId: "t1",
        transport: "grpc",
        port: 0,
        bindHost: "127.0.0.1",
        heartbeatMs: 1000,
        sizing: { workers: 4, maxConcurrentRuns: 2, localQueueCapacity: 3, maxWorkersPerRun: 2 },
      },
    });
  });

  it("a shared runtime has no tenant: an absent or empty DROVER_TENANT_ID is accepted as none", () => {
    const r = parseRuntimeConfig({ ...env, DROVER_TENANT_ID: "" });
    expect(r.ok && r.config.tenantId).toBeUndefined();
  });

  it("refuses a missing variable, naming it", () => {
    const { DROVER_WORKERS: _, ...rest } = env;
    const r = parseRuntimeConfig(rest);
    expect(r.ok).toBe(false);
    expect(!r.ok && r.problems).toEqual([expect.stringMatching(/^DROVER_WORKERS is required/)]);
  });

  it("refuses bad values, naming each variable, and never echoes the command token", () => {
    const r = parseRuntimeConfig({
      ...env,
      DROVER_RUNTIME_INSTANCE_ID: "RT_Upper",
      DROVER_TRANSPORT: "smtp",
      DROVER_PORT: "70000",
      DROVER_COMMAND_TOKEN: "short-secret",
    });
    expect(r.ok).toBe(false);
    const problems = !r.ok ? r.problems : [];
    expect(problems.map((p) => p.split(" ")[0]).sort()).toEqual([
      "DROVER_COMMAND_TOKEN",
      "DROVER_PORT",
      "DROVER_RUNTIME_INSTANCE_ID",
      "DROVER_TRANSPORT",
    ]);
    expect(problems.join("\n")).not.toContain("short-secret");
  });
});
