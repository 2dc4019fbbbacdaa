/**
 * Exhaustiveness check for switches over a discriminant (conventions.md "Naming"): a new variant
 * fails to compile at the call; a value that slips past the types at run time throws, naming `what`.
 */
export function assertNever(value: never, what = "variant"): never {
  throw new Error(`unhandled ${what}: ${JSON.stringify(value)}`);
}
