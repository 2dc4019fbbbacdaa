/**
 * Folds events into state, left to right: `evolve(…evolve(evolve(initial, e1), e2)…, en)`.
 * Pure and synchronous, so replaying the same events always gives the same state; `evolve` must
 * not mutate its input state (pass immutable state or copy) for that to hold.
 */
export function fold<S, E>(events: Iterable<E>, evolve: (state: S, event: E) => S, initial: S): S {
  let state = initial;
  for (const e of events) state = evolve(state, e);
  return state;
}
