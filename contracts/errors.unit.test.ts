import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { DroverError, ERROR_CATALOGUE, ERROR_CODES, isDroverError, isErrorCode } from "./errors.ts";

/** One documented row of docs/errors.md's catalogue table. */
interface DocRow {
  code: string;
  retryable: boolean;
  httpStatus: number;
  meaning: string;
  emittedBy: string;
  action: string;
}

const HEADER = ["code", "retryable", "HTTP", "meaning", "emitted by", "what an operator should do"];

/** Parses the markdown table whose header is HEADER; throws on any malformed row so the test can fail loudly. */
function parseCatalogueTable(markdown: string): DocRow[] {
  const lines = markdown.split("\n").map((l) => l.trim());
  const cells = (line: string) =>
    line
      .replace(/^\|/, "")
      .replace(/\|$/, "")
      .split("|")
      .map((c) => c.trim());
  const start = lines.findIndex((l) => l.startsWith("|") && JSON.stringify(cells(l)) === JSON.stringify(HEADER));
  if (start < 0) throw new Error(`docs/errors.md has no table with header ${HEADER.join(" | ")}`);
  const rows: DocRow[] = [];
  for (const line of lines.slice(start + 2)) {
    if (!line.startsWith("|")) break;
    const [code, retryable, http, meaning, emittedBy, action, ...extra] = cells(line);
    if (
      code === undefined ||
      retryable === undefined ||
      http === undefined ||
      meaning === undefined ||
      emittedBy === undefined ||
      action === undefined ||
      extra.length > 0
    )
      throw new Error(`malformed row: ${line}`);
    const bare = /^`([a-z0-9-]+)`$/.exec(code)?.[1];
    if (!bare) throw new Error(`code cell is not a backticked kebab-case code: ${line}`);
    if (retryable !== "yes" && retryable !== "no") throw new Error(`retryable must be yes or no: ${line}`);
    if (!/^\d{3}$/.test(http)) throw new Error(`HTTP must be a status code: ${line}`);
    rows.push({ code: bare, retryable: retryable === "yes", httpStatus: Number(http), meaning, emittedBy, action });
  }
  return rows;
}

const doc = readFileSync(new URL("../docs/errors.md", import.meta.url), "utf8");
const rows = parseCatalogueTable(doc);
const byCode = new Map(rows.map((r) => [r.code, r]));

describe("docs/errors.md documents exactly the error catalogue", () => {
  it("has one row per code (no code documented twice)", () => {
    expect(rows.length).toBeGreaterThan(0);
    expect(byCode.size).toBe(rows.length);
  });

  it.each(ERROR_CODES)("documents catalogue code %s with the catalogue's retryable and HTTP status", (code) => {
    const row = byCode.get(code);
    expect(row, `${code} is missing from docs/errors.md`).toBeDefined();
    expect({ retryable: row?.retryable, httpStatus: row?.httpStatus }).toEqual({
      retryable: ERROR_CATALOGUE[code].retryable,
      httpStatus: ERROR_CATALOGUE[code].httpStatus,
    });
  });

  it("documents no code that is missing from the catalogue", () => {
    expect(rows.map((r) => r.code).filter((c) => !isErrorCode(c))).toEqual([]);
  });

  it("gives every code a meaning, an emitter and an operator action", () => {
    expect(rows.filter((r) => !r.meaning || !r.emittedBy || !r.action).map((r) => r.code)).toEqual([]);
  });

  it("rejects a table whose code is not in the catalogue (the sync check can fail)", () => {
    const tampered = doc.replace("| `fence-timeout` |", "| `fence-timed-out` |");
    const codes = parseCatalogueTable(tampered).map((r) => r.code);
    expect(codes.filter((c) => !isErrorCode(c))).toEqual(["fence-timed-out"]);
    expect(() => parseCatalogueTable(doc.replace("| `fence-timeout` | yes |", "| `fence-timeout` | maybe |"))).toThrow(
      /retryable/,
    );
  });
});

describe("the error catalogue", () => {
  it("uses stable kebab-case codes and real HTTP error statuses", () => {
    for (const code of ERROR_CODES) {
      expect(code).toMatch(/^[a-z0-9]+(?:-[a-z0-9]+)*$/);
      expect(ERROR_CATALOGUE[code].httpStatus).toBeGreaterThanOrEqual(400);
      expect(ERROR_CATALOGUE[code].httpStatus).toBeLessThan(600);
    }
  });

  // hosts.md "Structured failure reasons": the catalogue must carry every one of them.
  const HOSTS_MD_REASONS = [
    "host-config-missing",
    "host-spec-invalid",
    "host-creation-failed",
    "host-identity-collision",
    "process-exited-during-startup",
    "pod-readiness-timeout",
    "pod-failed",
    "endpoint-resolution-failed",
    "port-forward-startup-failed",
    "runtime-command-readiness-failed",
    "runtime-identity-mismatch",
    "gateway-not-ready",
    "route-not-accepted",
    "route-probe-identity-mismatch",
    "capacity-publication-failed",
    "http-endpoint-missing",
    "grpc-endpoint-missing",
    "runtime-unreachable",
    "dispatch-timeout",
    "no-visible-capacity",
    "tenant-quota-exceeded",
    "scale-out-limit-reached",
    "heartbeat-stale",
    "host-exited",
    "pod-deleted",
    "execution-ownership-lost",
    "fence-timeout",
    "runtime-misdirected",
    "command-unauthorized",
    "local-queue-full",
  ];
  it("contains every structured failure reason listed in hosts.md", () => {
    expect(HOSTS_MD_REASONS.filter((c) => !isErrorCode(c))).toEqual([]);
  });

  it("DroverError takes retryable from the catalogue unless overridden and keeps code, cause and details", () => {
    const cause = new Error("10071");
    const e = new DroverError("version-conflict", "moved", { cause, details: { expected: 3 } });
    expect(e).toBeInstanceOf(Error);
    expect({ code: e.code, retryable: e.retryable, cause: e.cause, details: e.details }).toEqual({
      code: "version-conflict",
      retryable: true,
      cause,
      details: { expected: 3 },
    });
    expect(new DroverError("dag-invalid", "x").retryable).toBe(false);
    expect(new DroverError("dag-invalid", "x", { retryable: true }).retryable).toBe(true);
    expect(e.toJSON()).toEqual({
      code: "version-conflict",
      message: "moved",
      retryable: true,
      details: { expected: 3 },
    });
  });

  it("isDroverError narrows by class and optionally by code, and refuses look-alike plain objects", () => {
    const e = new DroverError("not-found", "gone");
    expect(isDroverError(e)).toBe(true);
    expect(isDroverError(e, "not-found")).toBe(true);
    expect(isDroverError(e, "forbidden")).toBe(false);
    expect(isDroverError({ code: "not-found", retryable: false })).toBe(false);
    expect(isErrorCode("toString")).toBe(false);
  });
});
