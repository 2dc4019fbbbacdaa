import { describe, expect, it } from "vitest";
import { warmUpSteps } from "./warm-up-steps.ts";

// Pure CPU over a journal of its own: no store, connection or tenant is passed in, so none is touched.
describe("warmUpSteps: the step path on a journal that keeps nothing", () => {
  it("runs whole 50-step runs, every step journaled and accepted, until the asked count", async () => {
    expect(await warmUpSteps(120)).toBe(150);
  });

  it("stops between steps once told to, without finishing its run", async () => {
    let asked = 0;
    const ran = await warmUpSteps(3_000, () => ++asked > 30);
    expect(ran).toBeGreaterThan(0);
    expect(ran).toBeLessThan(50);
  });

  it("lets pending I/O in between its steps (a binding or a command never waits for a whole run)", async () => {
    let stop = false;
    let steps = 0;
    const warming = warmUpSteps(3_000, () => (steps++, stop));
    await new Promise<void>((r) => setImmediate(r));
    stop = true;
    expect(await warming).toBe(0);
    expect(steps).toBeLessThan(5);
  });
});
