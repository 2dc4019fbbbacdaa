import { describe, expect, it, vi } from "vitest";
import { RuntimeCommandResult } from "../contracts/index.ts";
import { compiledCommandResult } from "./runtime-client.ts";

// Pure parsing of a runtime's answer (proves no transport).
const answer = {
  success: true,
  operation: "DispatchRun",
  runtimeInstanceId: "rt-a",
  hostIncarnation: "pid:1:1",
  timings: { receivedAt: "2026-12-07T12:00:00.000Z", handledMs: 0.4 },
};

describe("a runtime command's answer as admission checks it (pure parsing: proves no transport)", () => {
  it("a valid answer is parsed by the compiled schema, not by zod's runtime parser, to the same value", () => {
    const full = RuntimeCommandResult.safeParse(answer);
    const runtime = vi.spyOn(RuntimeCommandResult, "safeParse");
    try {
      const compiled = compiledCommandResult().safeParse(answer);
      expect(runtime).not.toHaveBeenCalled();
      expect(compiled).toEqual(full);
      expect(compiled.data?.payload).toEqual({}); // the default
      const withPayload = { ...answer, payload: { accepted: true }, failureReason: undefined };
      expect(compiledCommandResult().safeParse(withPayload)).toEqual(RuntimeCommandResult.safeParse(withPayload));
    } finally {
      runtime.mockRestore();
    }
  });

  it("an invalid answer is refused with the runtime parser's issues", () => {
    for (const bad of [
      { ...answer, success: "yes" },
      { ...answer, runtimeInstanceId: "RT A" },
      { ...answer, extra: 1 },
      { ...answer, timings: { receivedAt: "now", handledMs: -1 } },
      { ...answer, failureReason: "no-such-reason" },
      null,
    ]) {
      const full = RuntimeCommandResult.safeParse(bad);
      expect(full.success).toBe(false);
      expect(compiledCommandResult().safeParse(bad).error?.issues).toEqual(full.error?.issues);
    }
  });
});
