import { describe, expect, it } from "vitest";
import { EgressSettings } from "../../../contracts/index.ts";
import type { ProvisionerDeps } from "./context.ts";
import { egressOf } from "./host-start.ts";

// Pure: which tenants' egress settings a runtime's host spec carries; proves no transport.
const acme = EgressSettings.parse({ allow: ["10.0.0.0/8"] });
const globex = EgressSettings.parse({ allow: ["api.internal:8443"], maxResponseBytes: 2048 });
const deps = (egress?: ProvisionerDeps["egress"]) => ({ egress }) as ProvisionerDeps;

describe("egress settings handed to a runtime", () => {
  it("an owned runtime gets its own tenant's settings only, never another tenant's", () => {
    expect(egressOf(deps({ acme, globex }), "acme")).toEqual({ egress: { acme } });
    expect(egressOf(deps({ acme, globex }), "initech")).toEqual({});
    expect(egressOf(deps({ acme }), "constructor")).toEqual({});
  });

  it("a shared runtime gets every tenant's settings (each run is checked under its own tenant's)", () => {
    expect(egressOf(deps({ acme, globex }), undefined)).toEqual({ egress: { acme, globex } });
  });

  it("no configured egress settings: nothing, so every tenant runs under the default policy", () => {
    expect(egressOf(deps(undefined), "acme")).toEqual({});
    expect(egressOf(deps({}), undefined)).toEqual({});
  });
});
