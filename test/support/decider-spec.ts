/**
 * given(events) / when(command) / then(events | thenThrows(code)) for any Decider
 * (conventions.md "Tests"). Runs only decide/evolve in memory: no NATS, no clock, no IO.
 *
 *   const spec = deciderSpec(submissionDecider); // services/api/domain/submission.ts
 *   spec.given([]).when(submit).then([submitted]);
 *   spec.given([submitted]).when(submit).then([]); // a repeated idempotency key: no new event
 *   spec.given([]).when(submitWithBrokenDag).then(thenThrows("dag-invalid"));
 *
 * Beyond the expected outcome, `then` proves that decide does not mutate the state it is given,
 * that it is deterministic (same state and command, same events), and that evolve accepts every
 * event decide produced.
 */
import { expect } from "vitest";
import type { Decider } from "../../contracts/decider.ts";
import { isDroverError, type ErrorCode } from "../../contracts/errors.ts";

/** Expectation that decide refuses with a DroverError of `code` (and a message matching `message`). */
export interface ThrowsExpectation {
  readonly kind: "throws";
  readonly code: ErrorCode;
  readonly message?: RegExp;
}

export const thenThrows = (code: ErrorCode, message?: RegExp): ThrowsExpectation =>
  message === undefined ? { kind: "throws", code } : { kind: "throws", code, message };

const isThrows = (x: unknown): x is ThrowsExpectation =>
  typeof x === "object" && x !== null && !Array.isArray(x) && (x as { kind?: unknown }).kind === "throws";

export interface When<E, S> {
  /** Asserts the events decide returns (in order) or, with thenThrows(code), the refusal; returns the resulting state. */
  then(expected: readonly E[] | ThrowsExpectation): S;
  thenThrows(code: ErrorCode, message?: RegExp): void;
}
export interface Given<C, E, S> {
  when(command: C): When<E, S>;
  state(): S;
}
export interface DeciderSpec<C, E, S> {
  given(events: readonly E[]): Given<C, E, S>;
}

/** Snapshot of `state` when it can be cloned (plain data, Maps, Sets); undefined when it holds functions or class instances. */
function snapshot<S>(state: S): S | undefined {
  try {
    return structuredClone(state);
  } catch {
    return undefined;
  }
}

export function deciderSpec<C, E, S>(decider: Decider<C, E, S>): DeciderSpec<C, E, S> {
  return {
    given(events) {
      const fold = () => events.reduce((s, e) => decider.evolve(s, e), decider.initialState());
      return {
        state: fold,
        when(command) {
          const run = () => {
            const state = fold();
            const before = snapshot(state);
            const produced = decider.decide(command, state);
            if (before !== undefined) expect(state, "decide mutated the state it was given").toEqual(before);
            return { state, produced };
          };
          const then = (expected: readonly E[] | ThrowsExpectation): S => {
            if (isThrows(expected)) {
              let produced: readonly E[] | undefined;
              try {
                produced = run().produced;
              } catch (e) {
                expect(isDroverError(e), `decide threw a non-DroverError: ${String(e)}`).toBe(true);
                expect((e as { code: unknown }).code, `decide refused with the wrong code: ${String(e)}`).toBe(
                  expected.code,
                );
                if (expected.message) expect((e as Error).message).toMatch(expected.message);
                return fold();
              }
              throw new Error(
                `expected decide to refuse with ${expected.code}, but it returned ${JSON.stringify(produced)}`,
              );
            }
            const { state, produced } = run();
            expect(produced).toEqual(expected);
            expect(decider.decide(command, fold()), "decide is not deterministic").toEqual(produced);
            return produced.reduce((s, e) => decider.evolve(s, e), state);
          };
          return {
            then,
            thenThrows: (code, message) => {
              then(thenThrows(code, message));
            },
          };
        },
      };
    },
  };
}
