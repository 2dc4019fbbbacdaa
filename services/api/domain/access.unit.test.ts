import { describe, expect, it } from "vitest";
import { Credential, isDroverError, type ErrorCode } from "../../../contracts/index.ts";
import { authenticate, feedScope, readTenant, requireOperator, subjectVisibleIn, visibleIn } from "./access.ts";
import { hashToken, tokenTable } from "../shell/token-table.ts";

const acme = Credential.parse({ role: "tenant", tenantId: "acme" });
const ops = Credential.parse({ role: "operator", name: "ops" });
// One token stored as its hash (production form), one in plaintext (development form, hashed at load).
const tokens = tokenTable(
  { [hashToken("token-acme-0123456789")]: acme, "token-operator-012345": ops },
  { allowPlaintext: true },
);

function codeOf(f: () => unknown): ErrorCode | undefined {
  try {
    f();
  } catch (e) {
    return isDroverError(e) ? e.code : undefined;
  }
  return undefined;
}

describe("bearer authentication", () => {
  it("maps a configured bearer token to its credential, whatever the scheme's case", () => {
    expect(authenticate(tokens, "Bearer token-acme-0123456789")).toEqual(acme);
    expect(authenticate(tokens, "bearer  token-operator-012345")).toEqual(ops);
  });

  it("refuses a missing, malformed or unknown token as unauthenticated, never echoing the token", () => {
    for (const h of [
      undefined,
      "",
      "Bearer",
      "Basic dXNlcjpwdw==",
      "Bearer token-acme-012345678",
      "token-acme-0123456789",
      "Bearer __proto__",
      "Bearer constructor",
      "Bearer token-acme-0123456789 extra",
    ]) {
      expect(
        codeOf(() => authenticate(tokens, h)),
        String(h),
      ).toBe("unauthenticated");
    }
    try {
      authenticate(tokens, "Bearer secret-guess-000000");
    } catch (e) {
      expect((e as Error).message).not.toContain("secret-guess");
    }
  });
});

describe("read scopes", () => {
  it("confines a tenant to its own tenant and lets it name only itself", () => {
    expect(readTenant(acme, undefined)).toBe("acme");
    expect(readTenant(acme, "acme")).toBe("acme");
    expect(codeOf(() => readTenant(acme, "globex"))).toBe("forbidden");
    expect(feedScope(acme, undefined)).toEqual({ kind: "tenant", tenantId: "acme" });
  });

  it("lets an operator read any tenant it names, and every subject on the feed when it names none", () => {
    expect(readTenant(ops, "globex")).toBe("globex");
    expect(codeOf(() => readTenant(ops, undefined))).toBe("contract-violation");
    expect(feedScope(ops, undefined)).toEqual({ kind: "all" });
  });

  it("refuses a tenant parameter that is not a TenantId as invalid-id", () => {
    for (const t of ["ACME", "a.b", "*", ">", "", "x".repeat(64)])
      expect(
        codeOf(() => feedScope(ops, t)),
        t,
      ).toBe("invalid-id");
  });

  it("keeps operator-only operations from tenants", () => {
    expect(codeOf(() => requireOperator(acme))).toBe("forbidden");
    expect(() => requireOperator(ops)).not.toThrow();
  });

  it("shows a tenant only its own tenant-scoped events, even when a subject looks like its own", () => {
    const scope = feedScope(acme, undefined);
    expect(visibleIn(scope, { type: "run.submitted", tenantId: "acme" })).toBe(true);
    expect(visibleIn(scope, { type: "exec.completed", tenantId: "acme" })).toBe(true);
    expect(visibleIn(scope, { type: "run.submitted", tenantId: "globex" })).toBe(false);
    // A runtime whose id is "acme" matches <prefix>.*.acme.> but is not the tenant's.
    expect(visibleIn(scope, { type: "runtime.registered", tenantId: "acme" })).toBe(false);
    expect(subjectVisibleIn(scope, ["run", "acme", "run-1", "submitted"])).toBe(true);
    expect(subjectVisibleIn(scope, ["runtime", "acme", "registered"])).toBe(false);
    expect(visibleIn({ kind: "all" }, { type: "runtime.registered" })).toBe(true);
  });
});
