import { describe, expect, it } from "vitest";
import { isDroverError } from "../contracts/index.ts";
import { assertServerVersion, compareVersions, parseServerVersion } from "./server-version.ts";

describe("nats-server version gate", () => {
  it("orders versions numerically per component, not as strings", () => {
    expect(compareVersions("2.12.0", "2.9.10")).toBeGreaterThan(0);
    expect(compareVersions("2.15.3", "2.15.3")).toBe(0);
    expect(compareVersions("2.11.9", "2.12.0")).toBeLessThan(0);
    expect(compareVersions("3.0.0", "2.99.99")).toBeGreaterThan(0);
    expect(compareVersions("2.12.10", "2.12.9")).toBeGreaterThan(0);
  });

  it("sorts a prerelease before its release", () => {
    expect(compareVersions("2.12.0-RC.1", "2.12.0")).toBeLessThan(0);
    expect(compareVersions("2.12.1-RC.1", "2.12.0")).toBeGreaterThan(0);
    expect(compareVersions("2.12.0-RC.1", "2.12.0-RC.2")).toBeLessThan(0);
  });

  it("accepts 2.12.0 and newer, including build metadata and a leading v", () => {
    for (const v of ["2.12.0", "2.15.3", "v2.12.1", "2.14.0+abc", "3.0.0"])
      expect(() => assertServerVersion(v)).not.toThrow();
  });

  it("refuses servers older than 2.12 (Debian's 2.9.10, 2.11) with server-version-unsupported naming the minimum", () => {
    for (const v of ["2.9.10", "2.11.9", "2.12.0-RC.3"]) {
      let err: unknown;
      try {
        assertServerVersion(v);
      } catch (e) {
        err = e;
      }
      expect(isDroverError(err, "server-version-unsupported")).toBe(true);
      expect((err as Error).message).toContain(`nats-server ${v}`);
      expect((err as Error).message).toContain(">= 2.12.0");
    }
  });

  it("refuses a missing or unparsable version instead of guessing", () => {
    expect(parseServerVersion("banana")).toBeUndefined();
    expect(() => assertServerVersion(undefined)).toThrow(/unknown version/);
    expect(() => assertServerVersion("2.12")).toThrow(/not supported/);
  });
});
