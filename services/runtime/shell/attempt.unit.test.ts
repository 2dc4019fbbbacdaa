import { EventEmitter } from "node:events";
import { setTimeout as delay } from "node:timers/promises";
import { describe, expect, it } from "vitest";
import { DroverError, StepId } from "../../../contracts/index.ts";
import { retryAtAfterFailure } from "../../../aggregates/scheduler.ts";
import { attemptOutcome, jitterUnit } from "./attempt.ts";

/** In-process timers and errors only: no transport. */
describe("step attempts: timeoutMs, error classification, retry jitter and cap (proves no transport)", () => {
  it("an attempt longer than timeoutMs fails with step-timeout (retryable) and its signal is aborted, even if it ignores it", async () => {
    let seen: AbortSignal | undefined;
    const out = await attemptOutcome(
      { id: StepId.parse("s"), timeoutMs: 30 },
      new AbortController().signal,
      async (own) => {
        seen = own.signal;
        await delay(500); // ignores the signal
        return 1;
      },
    );
    expect(out).toMatchObject({ ok: false, code: "step-timeout", retryable: true });
    expect(seen?.aborted).toBe(true);
  });

  it("typed errors keep their code and retryability; untyped ones are retryable without a code", async () => {
    const parent = new AbortController().signal;
    const typed = await attemptOutcome({ id: StepId.parse("s") }, parent, async () => {
      throw new DroverError("step-non-retryable", "bad input", { retryable: false });
    });
    expect(typed).toEqual({ ok: false, code: "step-non-retryable", message: "bad input", retryable: false });
    const plain = await attemptOutcome({ id: StepId.parse("s") }, parent, async () => {
      throw new Error("flaked");
    });
    expect(plain).toEqual({ ok: false, message: "flaked", retryable: true });
    expect(await attemptOutcome({ id: StepId.parse("s"), timeoutMs: 1000 }, parent, async () => "done")).toEqual({
      ok: true,
      output: "done",
    });
  });

  it("an attempt's signal is its own: aborted with the execution's reason, and the execution's signal holds one listener however many attempts ran", async () => {
    const execution = new AbortController();
    const before = EventEmitter.getEventListeners(execution.signal, "abort").length;
    let first: AbortSignal | undefined;
    const attempts = async (n: number) => {
      for (let i = 0; i < n; i++)
        await attemptOutcome({ id: StepId.parse("s") }, execution.signal, async ({ signal }) => {
          first ??= signal;
          signal.addEventListener("abort", () => undefined);
          return i;
        });
    };
    await attempts(1);
    expect(EventEmitter.getEventListeners(execution.signal, "abort")).toHaveLength(before + 1);
    await attempts(100);
    expect(EventEmitter.getEventListeners(execution.signal, "abort")).toHaveLength(before + 1);
    expect(first).not.toBe(execution.signal);
    // A running attempt sees the execution's abort (ownership lost, cancel) with its reason.
    let seen: AbortSignal | undefined;
    const running = attemptOutcome({ id: StepId.parse("s") }, execution.signal, async ({ signal }) => {
      seen = signal;
      await delay(10_000, undefined, { signal });
    });
    await delay(5);
    execution.abort(new Error("ownership lost"));
    // The step's own rejection is the outcome (the execution drops it: nothing is written after an abort).
    expect(await running).toMatchObject({ ok: false, retryable: true });
    expect(seen?.aborted).toBe(true);
    expect(seen?.reason).toEqual(new Error("ownership lost"));
  });

  it("an attempt's signal is made when first read: an attempt that never reads it links nothing to its execution, and one read after the timeout or the execution's abort is already aborted with that reason", async () => {
    const execution = new AbortController();
    const before = EventEmitter.getEventListeners(execution.signal, "abort").length;
    await attemptOutcome({ id: StepId.parse("s") }, execution.signal, async () => 1);
    expect(EventEmitter.getEventListeners(execution.signal, "abort")).toHaveLength(before);
    let late: AbortSignal | undefined;
    let readLate = () => {};
    const lateRead = new Promise<void>((ok) => (readLate = ok));
    const timedOut = await attemptOutcome({ id: StepId.parse("s"), timeoutMs: 20 }, execution.signal, async (own) => {
      await delay(60);
      late = own.signal;
      readLate();
      return 1;
    });
    expect(timedOut).toMatchObject({ ok: false, code: "step-timeout" });
    await lateRead;
    expect(late?.aborted).toBe(true);
    expect((late?.reason as DroverError).code).toBe("step-timeout");
    const running = attemptOutcome({ id: StepId.parse("s") }, execution.signal, async (own) => {
      await delay(30);
      own.signal.throwIfAborted();
      return 1;
    });
    execution.abort(new Error("cancelled"));
    expect(await running).toMatchObject({ ok: false, message: "cancelled", retryable: true });
  });

  it("retry delay is exponential, capped by maxDelayMs, shortened by at most jitter of itself, and the same for the same attempt", () => {
    const step = { retry: { maxAttempts: 10, backoffMs: 1000, maxDelayMs: 5000, jitter: 0.5 } };
    expect(retryAtAfterFailure(step, 1, 0, 0)).toBe(1000);
    expect(retryAtAfterFailure(step, 4, 0, 0)).toBe(5000); // 8000 capped
    expect(retryAtAfterFailure(step, 4, 0, 0.5)).toBe(3750);
    expect(retryAtAfterFailure(step, 10, 0, 0)).toBeUndefined();
    const u = jitterUnit("exec-1", "s", 2);
    expect(u).toBe(jitterUnit("exec-1", "s", 2));
    expect(u).toBeGreaterThanOrEqual(0);
    expect(u).toBeLessThan(1);
    expect(jitterUnit("exec-1", "s", 3)).not.toBe(u);
  });
});
