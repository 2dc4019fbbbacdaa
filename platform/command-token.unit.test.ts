import { describe, expect, it } from "vitest";
import { commandSecretFromEnv, DEV_COMMAND_SECRET } from "./command-token.ts";

// Pure: reads the given environment object only, proves no transport.
const REAL = "8f1c2a9d4e7b6035a1c9e2f4d8b7a6c5";

describe("command secret at start-up", () => {
  it("accepts a real secret, with or without the development flag", () => {
    expect(commandSecretFromEnv({ DROVER_COMMAND_SECRET: REAL })).toEqual({ secret: REAL, isDefault: false });
  });

  it.each([
    [undefined, "is not set"],
    ["", "is not set"],
    ["change-me-to-32-random-bytes-of-hex", "is a placeholder"],
    [DEV_COMMAND_SECRET, "is a placeholder"],
    ["short-secret-123", "is shorter than 32 characters"],
    ["a".repeat(40), "has fewer than 8 distinct characters"],
  ])("refuses %j without DROVER_DEV=1: the message says why and how to fix it", (value, why) => {
    expect(() => commandSecretFromEnv({ DROVER_COMMAND_SECRET: value })).toThrow(
      new RegExp(`DROVER_COMMAND_SECRET ${why}.*openssl rand -hex 32.*DROVER_DEV=1`),
    );
  });

  it("with DROVER_DEV=1 falls back to the development secret and says it did", () => {
    expect(commandSecretFromEnv({ DROVER_DEV: "1" })).toEqual({ secret: DEV_COMMAND_SECRET, isDefault: true });
    // Only the exact value 1 is the flag: "true", "yes" or "0" are not a development run.
    for (const v of ["true", "yes", "0"]) expect(() => commandSecretFromEnv({ DROVER_DEV: v })).toThrow(/is not set/);
  });
});
