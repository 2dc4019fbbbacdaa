import { describe, expect, it } from "vitest";
import { runtimeTable } from "./runtimes.ts";

// Unit: the table rendering of `drover runtimes` (no API, no transport).
const V1 = "a".repeat(64);
const V2 = "b".repeat(64);
const row = (id: string, worker: object | null, status = "ready") => ({
  runtimeInstanceId: id,
  tenantId: "acme",
  status,
  hostProvider: "kubernetes",
  worker,
});

describe("drover runtimes (table)", () => {
  it("shows each runtime's worker version, whether it drains and its pinned runs; - without a worker", () => {
    const out = runtimeTable([
      row("rt-old", {
        version: V1,
        deployedAt: "2026-12-03T19:00:00.000Z",
        pinned: true,
        draining: true,
        pinnedRuns: 4,
      }),
      row("rt-new", {
        version: V2,
        deployedAt: "2026-12-03T20:00:00.000Z",
        pinned: false,
        draining: false,
        pinnedRuns: 0,
      }),
      row("rt-shared", null),
    ]);
    const lines = out.trimEnd().split("\n");
    expect(lines[0]).toMatch(/^RUNTIME\s+TENANT\s+STATUS\s+HOST\s+VERSION\s+DRAINING\s+PINNED RUNS$/);
    expect(lines[1]).toMatch(/^rt-old\s+acme\s+ready\s+kubernetes\s+aaaaaaaaaaaa \(pinned\)\s+yes\s+4$/);
    expect(lines[2]).toMatch(/^rt-new\s+acme\s+ready\s+kubernetes\s+bbbbbbbbbbbb\s+no\s+0$/);
    expect(lines[3]).toMatch(/^rt-shared\s+acme\s+ready\s+kubernetes\s+-\s+-\s+-$/);
  });
});
