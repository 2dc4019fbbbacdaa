/** Exhaustiveness check for switches over a discriminant: a new variant fails to compile here. */
export function assertNever(value: never): never {
  throw new Error(`unhandled variant: ${JSON.stringify(value)}`);
}
