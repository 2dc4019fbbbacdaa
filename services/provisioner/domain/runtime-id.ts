import { ID_MAX_LENGTH, RuntimeInstanceId } from "../../../contracts/index.ts";

/** Length of the unique part of a RuntimeInstanceId; with a ≤ 31-character prefix the id stays ≤ 63. */
export const RUNTIME_SUFFIX_LENGTH = 12;
const SUFFIX = new RegExp(`^[a-z0-9]{${RUNTIME_SUFFIX_LENGTH}}$`);

/**
 * `<prefix>-<suffix>`: the suffix is injected (the shell draws it at random: ids are never reused,
 * and a collision is refused by the conditional append of `registered` at sequence 0). Throws on a
 * suffix that is not 12 lowercase alphanumerics (no dash, which keeps prefix counting exact) or an
 * id that does not fit the id rules.
 */
export function runtimeInstanceIdOf(prefix: string, suffix: string): RuntimeInstanceId {
  if (!SUFFIX.test(suffix))
    throw new Error(`runtime id suffix must be ${RUNTIME_SUFFIX_LENGTH} of [a-z0-9], got ${JSON.stringify(suffix)}`);
  const id = `${prefix}-${suffix}`;
  if (id.length > ID_MAX_LENGTH) throw new Error(`runtime id ${id} is longer than ${ID_MAX_LENGTH} characters`);
  return RuntimeInstanceId.parse(id);
}
