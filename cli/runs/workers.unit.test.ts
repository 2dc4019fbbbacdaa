import { describe, expect, it } from "vitest";
import { deployLine } from "./workers.ts";

// Formatting of plain values: proves no transport.
describe("drover workers: the deploy line (pure formatting, no transport)", () => {
  it("names the deployed version, the one before, the kinds and who asked; or that the tenant was never deployed by event", () => {
    const body = {
      outcome: "deployed",
      tenantId: "acme",
      deployed: { version: "b".repeat(64), previous: "a".repeat(64), kinds: ["work"], requestedBy: "tenant:acme" },
      pendingRequestSeq: null,
    };
    expect(deployLine(body)).toBe(
      `deployed: acme  deployed ${"b".repeat(12)} (was ${"a".repeat(12)})  kinds work  asked by tenant:acme\n`,
    );
    expect(deployLine({ tenantId: "acme", deployed: null, pendingRequestSeq: 4 })).toBe(
      "acme  never deployed by event  request 4 pending\n",
    );
  });
});
