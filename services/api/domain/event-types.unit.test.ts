import { describe, expect, it } from "vitest";
import { TenantId } from "../../../contracts/index.ts";
import { typeFilter, typeSubjects } from "./event-types.ts";

const acme = { kind: "tenant", tenantId: TenantId.parse("acme") } as const;

describe("event feed ?types= (pure: no transport)", () => {
  it("keeps exact types and <aggregate>.* prefixes, everything without a list", () => {
    const keep = typeFilter("run.*, exec.step-completed");
    expect(["run.completed", "exec.step-completed", "exec.started"].map(keep)).toEqual([true, true, false]);
    expect(typeFilter(undefined)("exec.started")).toBe(true);
  });

  it("maps the types to the tenant's subjects, an aggregate's wildcard covering its exact types (no overlap)", () => {
    expect(typeSubjects("run.completed,run.failed,exec.*,exec.started", acme)).toEqual([
      "run.acme.*.completed",
      "run.acme.*.failed",
      "exec.acme.>",
    ]);
  });

  it("gives a tenant no runtime subjects, an operator runtime and every tenant's", () => {
    expect(typeSubjects("runtime.registered,run.completed", acme)).toEqual(["run.acme.*.completed"]);
    expect(typeSubjects("runtime.registered,run.completed,runtime.*", { kind: "all" })).toEqual([
      "runtime.>",
      "run.*.*.completed",
    ]);
  });

  it("reads the whole scope when nothing listed can match (no list, unknown shapes, runtime types for a tenant)", () => {
    for (const types of [undefined, "", "runtime.registered", "run.>", "Run.Completed", "run..x"])
      expect(typeSubjects(types, acme)).toBeUndefined();
  });
});
