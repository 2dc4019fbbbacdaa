import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { Credential } from "../../../contracts/index.ts";
import { hashToken, tokenTable } from "./token-table.ts";

// Pure: hashing and comparison only, proves no transport.
const acme = Credential.parse({ role: "tenant", tenantId: "acme" });
const ops = Credential.parse({ role: "operator", name: "ops" });

describe("API token table (stored as SHA-256 digests)", () => {
  it("stores sha256:<hex> as `printf %s TOKEN | sha256sum` prints it, and finds the credential by the token", () => {
    const hex = createHash("sha256").update("token-acme-0123456789").digest("hex");
    expect(hashToken("token-acme-0123456789")).toBe(`sha256:${hex}`);
    const t = tokenTable(
      { [`sha256:${hex}`]: acme, [hashToken("token-operator-012345")]: ops },
      { allowPlaintext: false },
    );
    expect(t.lookup("token-acme-0123456789")).toEqual(acme);
    expect(t.lookup("token-operator-012345")).toEqual(ops);
    expect(t.lookup("token-acme-012345678")).toBeUndefined();
    // The digest itself is not a credential.
    expect(t.lookup(`sha256:${hex}`)).toBeUndefined();
    expect(t.lookup("__proto__")).toBeUndefined();
  });

  it("refuses plaintext tokens without the development flag, naming the fix and never the token", () => {
    let message = "";
    try {
      tokenTable({ "plain-token-0123456789": acme }, { allowPlaintext: false });
    } catch (e) {
      message = (e as Error).message;
    }
    expect(message).toContain("1 token(s) stored in plaintext");
    expect(message).toContain("DROVER_DEV=1");
    expect(message).not.toContain("plain-token-0123456789");
    expect(
      tokenTable({ "plain-token-0123456789": acme }, { allowPlaintext: true }).lookup("plain-token-0123456789"),
    ).toEqual(acme);
  });
});
