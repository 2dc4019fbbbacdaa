import { describe, expect, it } from "vitest";
import { hostSpec } from "../../test/support/host-processes.ts";
import { parseProcessIncarnation } from "./proc-table.ts";
import { identityKey, runtimeEnv } from "./runtime-env.ts";

describe("runtime start-up environment (pure)", () => {
  it("gives identity, tenant, sizing, token and endpoint, and no base variable can override them or leak an optional one", () => {
    const spec = hostSpec({ runtimeInstanceId: "rt-a-0123456789ab", tenantId: undefined, heartbeatMs: 500 });
    const env = runtimeEnv(spec, "127.0.0.1", 41000, {
      PATH: "/bin",
      DROVER_RUNTIME_INSTANCE_ID: "rt-someone-else",
      DROVER_TENANT_ID: "tenant-b",
      DROVER_COMMAND_TOKEN: "leaked",
      DROVER_POD_UID: "u",
    });
    expect(env).toEqual({
      PATH: "/bin",
      DROVER_RUNTIME_INSTANCE_ID: "rt-a-0123456789ab",
      DROVER_CONTROL_PLANE_ID: "cp-host-test",
      DROVER_WORKERS: "1",
      DROVER_MAX_CONCURRENT_RUNS: "1",
      DROVER_LOCAL_QUEUE_CAPACITY: "2",
      DROVER_MAX_WORKERS_PER_RUN: "1",
      DROVER_COMMAND_TOKEN: "token-0123456789abcdef",
      NATS_URL: "nats://127.0.0.1:4222",
      DROVER_TRANSPORT: "http",
      DROVER_BIND_HOST: "127.0.0.1",
      DROVER_PORT: "41000",
      DROVER_HEARTBEAT_MS: "500",
    });
  });

  it("hands the egress settings over as DROVER_EGRESS JSON, and a base value can neither set nor keep it", () => {
    const egress = { acme: { allow: ["10.0.0.0/8"], maxResponseBytes: 4096 } };
    const env = runtimeEnv(hostSpec({ egress }), "127.0.0.1", 1, { DROVER_EGRESS: '{"acme":{"allow":["0.0.0.0/0"]}}' });
    expect(JSON.parse(env.DROVER_EGRESS ?? "null")).toEqual(egress);
    expect(runtimeEnv(hostSpec({}), "127.0.0.1", 1, { DROVER_EGRESS: "{}" })).not.toHaveProperty("DROVER_EGRESS");
  });

  it("treats a different tenant or sizing as another identity, but not another token", () => {
    const spec = hostSpec();
    expect(identityKey({ ...spec, commandToken: "other-token-0123456789" })).toBe(identityKey(spec));
    expect(identityKey({ ...spec, tenantId: "tenant-b" })).not.toBe(identityKey(spec));
    expect(identityKey({ ...spec, sizing: { ...spec.sizing, workers: 9 } })).not.toBe(identityKey(spec));
  });

  it("parses only process incarnations", () => {
    expect(parseProcessIncarnation("pid:42:123456")).toEqual({ pid: 42, startTime: "123456" });
    expect(parseProcessIncarnation("pod:0f1e2d3c")).toBeUndefined();
    expect(parseProcessIncarnation("pid:0:1")).toBeUndefined();
  });
});
