import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { DroverConfig, tenantSettingsOf } from "./config.ts";
import { ID_PATTERN, TenantId } from "./ids.ts";
import {
  defaultTenantSettings,
  RUNTIME_PREFIX_MAX_LENGTH,
  runtimePrefixOf,
  sizingOf,
  TenantSettings,
} from "./tenant-settings.ts";

const t = (s: string) => TenantId.parse(s);
const SHARED_DEFAULTS = {
  isolationMode: "shared",
  preferDedicatedCapacity: false,
  allowSharedFallback: false,
  maxRuntimeInstances: 2,
  workersPerInstance: 2,
  maxConcurrentRunsPerInstance: 2,
  maxWorkersPerRun: 1,
  localQueueCapacity: 8,
  maxConcurrentRuns: 100,
  maxQueuedRuns: 1000,
  submissionPace: { queuedRunsAbove: 200, perSecond: 20, burst: 20 },
  overQuota: "queue",
  weight: 1,
  hostProvider: "process",
  transport: "http",
  maxCrashRecoveries: 3,
  flowKeys: [],
  maxRunPriority: 10,
};

describe("tenant settings defaults", () => {
  it("gives a tenant with no settings the documented shared defaults, under its own id and no group", () => {
    expect(defaultTenantSettings(t("newcomer"))).toEqual({ tenantId: "newcomer", ...SHARED_DEFAULTS });
  });

  it("gives an unknown tenant the shared defaults, never another configured tenant's settings", () => {
    const config = DroverConfig.parse({
      controlPlaneId: "cp",
      tenants: [
        {
          tenantId: "acme",
          tenantGroupId: "g1",
          isolationMode: "dedicated",
          maxRuntimeInstances: 9,
          runtimeInstanceIdPrefix: "acme",
        },
        { tenantId: "beta", isolationMode: "hybrid", allowSharedFallback: true },
      ],
    });
    expect(tenantSettingsOf(config, "acme")).toMatchObject({
      tenantId: "acme",
      isolationMode: "dedicated",
      tenantGroupId: "g1",
    });
    const unknown = tenantSettingsOf(config, "acme-2");
    expect(unknown).toEqual({ tenantId: "acme-2", ...SHARED_DEFAULTS });
    expect(unknown.tenantGroupId).toBeUndefined();
    expect(unknown.runtimeInstanceIdPrefix).toBeUndefined();
  });

  it("rejects a configuration that names a tenant twice", () => {
    expect(
      DroverConfig.safeParse({
        controlPlaneId: "cp",
        tenants: [{ tenantId: "a" }, { tenantId: "a", isolationMode: "dedicated" }],
      }).success,
    ).toBe(false);
  });

  it("rejects two tenants sharing a runtime prefix, configured or derived (a prefix's runtime limit is decided on one tenant's quota aggregate)", () => {
    const issues = (tenants: object[]) =>
      DroverConfig.safeParse({ controlPlaneId: "cp", tenants }).error?.issues.map((i) => i.message) ?? [];
    expect(
      issues([
        { tenantId: "a", runtimeInstanceIdPrefix: "p" },
        { tenantId: "b", runtimeInstanceIdPrefix: "p" },
      ]),
    ).toEqual(["tenants a and b share the runtime prefix p: each tenant needs its own"]);
    expect(issues([{ tenantId: "a", runtimeInstanceIdPrefix: "rt-b" }, { tenantId: "b" }])).toEqual([
      "tenants a and b share the runtime prefix rt-b: each tenant needs its own",
    ]);
    expect(issues([{ tenantId: "a", runtimeInstanceIdPrefix: "p" }, { tenantId: "b" }])).toEqual([]);
  });

  it("refuses a tenant on process hosts when processHosts is refused (a cluster), and allows them by default", () => {
    const tenants = [{ tenantId: "a", hostProvider: "kubernetes" }, { tenantId: "b" }];
    expect(DroverConfig.parse({ controlPlaneId: "cp", tenants }).processHosts).toBe("allowed");
    const refused = DroverConfig.safeParse({ controlPlaneId: "cp", tenants, processHosts: "refused" });
    expect(refused.error?.issues.map((i) => i.message)).toEqual([
      'tenant b asks for process hosts, which processHosts "refused" forbids: set its hostProvider',
    ]);
    expect(
      DroverConfig.safeParse({ controlPlaneId: "cp", tenants: tenants.slice(0, 1), processHosts: "refused" }).success,
    ).toBe(true);
  });

  it("rejects unknown fields, unknown modes and invalid prefixes instead of ignoring them", () => {
    expect(TenantSettings.safeParse({ tenantId: "a", isolation: "dedicated" }).success).toBe(false);
    expect(TenantSettings.safeParse({ tenantId: "a", isolationMode: "private" }).success).toBe(false);
    expect(TenantSettings.safeParse({ tenantId: "a", runtimeInstanceIdPrefix: "Acme" }).success).toBe(false);
    expect(TenantSettings.safeParse({ tenantId: "a", runtimeInstanceIdPrefix: "a".repeat(32) }).success).toBe(false);
    expect(TenantSettings.safeParse({ tenantId: "a", runtimeInstanceIdPrefix: "a".repeat(31) }).success).toBe(true);
  });

  it("sizingOf takes every sizing field from the tenant settings", () => {
    const s = TenantSettings.parse({
      tenantId: "a",
      workersPerInstance: 4,
      maxConcurrentRunsPerInstance: 3,
      localQueueCapacity: 5,
      maxWorkersPerRun: 2,
    });
    expect(sizingOf(s)).toEqual({ workers: 4, maxConcurrentRuns: 3, localQueueCapacity: 5, maxWorkersPerRun: 2 });
  });
});

describe("runtimePrefixOf", () => {
  it("uses the configured prefix when there is one", () => {
    expect(runtimePrefixOf(TenantSettings.parse({ tenantId: "acme", runtimeInstanceIdPrefix: "ac" }))).toBe("ac");
  });

  it("derives rt-<tenantId> when it fits in 31 characters", () => {
    expect(runtimePrefixOf(defaultTenantSettings(t("acme")))).toBe("rt-acme");
    expect(runtimePrefixOf(defaultTenantSettings(t("a".repeat(28))))).toBe(`rt-${"a".repeat(28)}`);
  });

  it("keeps the prefixes of two long tenant ids distinct even when they share their first 28 characters", () => {
    const a = runtimePrefixOf(defaultTenantSettings(t("acme-production-eu-west-1-team-a")));
    const b = runtimePrefixOf(defaultTenantSettings(t("acme-production-eu-west-1-team-b")));
    expect(a).not.toBe(b);
    expect(a).toBe(runtimePrefixOf(defaultTenantSettings(t("acme-production-eu-west-1-team-a"))));
  });

  it("always derives a subject-safe id of at most 31 characters (bounded property)", () => {
    const tenantIds = fc.stringMatching(/^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/);
    fc.assert(
      fc.property(tenantIds, (id) => {
        const prefix = runtimePrefixOf(defaultTenantSettings(t(id)));
        expect(prefix.length).toBeLessThanOrEqual(RUNTIME_PREFIX_MAX_LENGTH);
        expect(prefix).toMatch(ID_PATTERN);
        expect(prefix.startsWith("rt-")).toBe(true);
      }),
      { numRuns: 500 },
    );
  });
});
