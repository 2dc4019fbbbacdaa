import { describe, expect, it } from "vitest";
import {
  ControlPlaneId,
  EventId,
  ExecutionId,
  ForensicsId,
  HostIncarnation,
  ID_MAX_LENGTH,
  LocalRunId,
  RuntimeFailureIncidentId,
  RuntimeInstanceId,
  ScaleOutRequestId,
  SharedRunId,
  StepId,
  TenantGroupId,
  TenantId,
  inFlightForensicsId,
  isSubjectSafeId,
  localQueuedForensicsId,
} from "./ids.ts";

const ID_SCHEMAS = {
  TenantId,
  TenantGroupId,
  SharedRunId,
  LocalRunId,
  ExecutionId,
  RuntimeInstanceId,
  ScaleOutRequestId,
  RuntimeFailureIncidentId,
  ControlPlaneId,
  StepId,
  EventId,
} as const;

const messagesOf = (r: { success: boolean; error?: { issues: { message: string }[] } }) =>
  r.error?.issues.map((i) => i.message) ?? [];

describe.each(Object.entries(ID_SCHEMAS))("%s is subject-safe and never rewritten", (name, schema) => {
  it.each(["a", "0", "tenant-a", "a1-b2-c3", "x".repeat(ID_MAX_LENGTH)])(
    "accepts %s and returns it unchanged",
    (value) => {
      expect(schema.parse(value)).toBe(value);
    },
  );

  it("accepts exactly 63 characters and rejects 64 with a message naming the id and the limit", () => {
    expect(schema.safeParse("a".repeat(63)).success).toBe(true);
    const r = schema.safeParse("a".repeat(64));
    expect(messagesOf(r)).toEqual([`${name} must be at most 63 characters`]);
  });

  it("rejects the empty string saying it must not be empty", () => {
    expect(messagesOf(schema.safeParse(""))).toContain(`${name} must not be empty`);
  });

  it.each([
    ["uppercase", "Tenant-A"],
    ["a dot (subject token separator)", "tenant.a"],
    ["the * wildcard", "tenant-*"],
    ["the > wildcard", "tenant>"],
    ["a space", "tenant a"],
    ["a leading space (not trimmed)", " tenant"],
    ["a trailing newline", "tenant\n"],
    ["an underscore", "tenant_a"],
    ["a colon", "tenant:a"],
    ["a slash", "tenant/a"],
    ["a leading hyphen", "-tenant"],
    ["a trailing hyphen", "tenant-"],
    ["non-ASCII letters", "tenänt"],
  ])("rejects %s instead of rewriting it (%j)", (_what, value) => {
    const r = schema.safeParse(value);
    expect(r.success).toBe(false);
    expect(messagesOf(r)).toEqual([`${name} must be lowercase [a-z0-9-], starting and ending with a letter or digit`]);
  });

  it("rejects non-strings", () => {
    for (const v of [42, null, undefined, {}, ["a"]]) expect(schema.safeParse(v).success).toBe(false);
  });
});

describe("isSubjectSafeId", () => {
  it("agrees with the id schemas on valid, invalid, empty and oversize values", () => {
    for (const v of ["a", "a-b", "A", "a.b", "a*", ">", "", " a", "a".repeat(63), "a".repeat(64), "-a"]) {
      expect(isSubjectSafeId(v)).toBe(TenantId.safeParse(v).success);
    }
  });
});

describe("ForensicsId is deterministic and usable directly as a subject token", () => {
  const ex = ExecutionId.parse("ex-1"),
    run = SharedRunId.parse("run-1"),
    lr = LocalRunId.parse("lr-1");

  it("builds the in-flight and local-queued shapes of identities-and-events.md", () => {
    expect(inFlightForensicsId(ex, run, lr)).toBe("runtime-recovery:ex-1:run-1:lr-1");
    expect(localQueuedForensicsId(run, lr)).toBe("runtime-recovery:local-queued:run-1:lr-1");
    expect(inFlightForensicsId(ex, run, lr)).toBe(inFlightForensicsId(ex, run, lr));
  });

  it("contains no NATS subject separator, wildcard or whitespace (':' is allowed in subjects)", () => {
    const longest = inFlightForensicsId(
      ExecutionId.parse("e".repeat(63)),
      SharedRunId.parse("s".repeat(63)),
      LocalRunId.parse("l".repeat(63)),
    );
    expect(longest).not.toMatch(/[.*>\s]/);
    expect(ForensicsId.parse(longest)).toBe(longest);
  });

  it.each([
    ["the prefix alone", "runtime-recovery:"],
    ["empty parts", "runtime-recovery::::"],
    ["two parts", "runtime-recovery:run-1:lr-1"],
    ["four parts", "runtime-recovery:a:b:c:d"],
    ["a part with a dot", "runtime-recovery:ex.1:run-1:lr-1"],
    ["a part with a wildcard", "runtime-recovery:ex-1:*:lr-1"],
    ["a part ending in a hyphen", "runtime-recovery:ex-:run-1:lr-1"],
    ["an uppercase part", "runtime-recovery:EX-1:run-1:lr-1"],
    ["a part of 64 characters", `runtime-recovery:${"e".repeat(64)}:run-1:lr-1`],
    ["another prefix", "recovery:ex-1:run-1:lr-1"],
  ])("rejects %s", (_what, value) => {
    expect(ForensicsId.safeParse(value).success).toBe(false);
  });
});

describe("HostIncarnation", () => {
  it.each(["pid:4242:987654", "pod:0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"])("accepts %s", (v) => {
    expect(HostIncarnation.parse(v)).toBe(v);
  });
  it.each(["pid:4242", "pid:x:1", "pod:", "pod:ABC", "4242", "pid:1:2 "])("rejects %j", (v) => {
    expect(HostIncarnation.safeParse(v).success).toBe(false);
  });
});
