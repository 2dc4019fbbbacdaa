/** Exhaustiveness check for switches over a discriminant: a new variant fails to compile here. */
export function assertNever(value: never, what: string): never {
  throw new Error(`unhandled ${what}: ${JSON.stringify(value)}`);
}
