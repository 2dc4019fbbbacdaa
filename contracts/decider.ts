/**
 * The shape of every decision in drover (conventions.md "Domain and IO"): `decide` turns a command
 * and the current state into the events to append (or throws a DroverError for a refusal that is
 * not an event), `evolve` folds one event into the state, `initialState` is the state before any
 * event. All three are pure: time and ids arrive in the command, never from the clock or IO.
 * Types only, so a service's domain can import it without importing another service.
 */
export interface Decider<C, E, S> {
  decide(command: C, state: S): readonly E[];
  evolve(state: S, event: E): S;
  initialState(): S;
}
