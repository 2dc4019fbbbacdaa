import { describe, expect, it } from "vitest";
import { DroverConfig } from "./config.ts";

// Pure: the boundary is which warm pool sizes DROVER_CONFIG accepts (a P=20 proof places ~100 runtimes;
// a pool of 64, the old maximum, ran out before its kills).
describe("warm pool sizes in DROVER_CONFIG (pure)", () => {
  it("accepts pools up to 256 per provider and refuses larger ones with the field named", () => {
    const parsed = DroverConfig.parse({ controlPlaneId: "cp-x", warmPool: { process: 110, kubernetes: 256 } });
    expect(parsed.warmPool).toEqual({ process: 110, kubernetes: 256 });
    const refused = DroverConfig.safeParse({ controlPlaneId: "cp-x", warmPool: { process: 257 } });
    expect(refused.success).toBe(false);
    expect(refused.error?.issues[0]?.path).toEqual(["warmPool", "process"]);
  });
});
