import { describe, expect, it } from "vitest";
import { DroverConfig } from "../contracts/index.ts";
import { processConfig } from "./control-plane-processes.ts";

describe("the configuration a test control plane's processes read (pure, no process started)", () => {
  it("keeps the caller's API limits and only moves the API to a free loopback port", () => {
    const parsed = DroverConfig.parse(
      processConfig({
        controlPlaneId: "cp-x",
        api: { port: 8080, rateLimit: { max: 1_000_000 }, maxEventFeedsPerCredential: 3 },
      }),
    );
    expect(parsed.api).toMatchObject({ host: "127.0.0.1", port: 0, maxEventFeedsPerCredential: 3 });
    expect(parsed.api.rateLimit.max).toBe(1_000_000);
  });

  it("without API settings, the defaults apply (6 000 requests a minute)", () => {
    const parsed = DroverConfig.parse(processConfig({ controlPlaneId: "cp-x" }));
    expect(parsed.api.rateLimit).toEqual({ max: 6000, timeWindowMs: 60_000 });
  });
});
