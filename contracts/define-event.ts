import { z } from "zod";
import { EnvelopeBase } from "./envelope.ts";

/** The aggregates of the DROVER stream; each is the second subject token (`drover.<aggregate>...`). */
export const AGGREGATES = ["run", "exec", "scaleout", "runtime", "forensics"] as const;
export type Aggregate = (typeof AGGREGATES)[number];

/**
 * Defines one event: its literal `type` (`<aggregate>.<name>`), schema version and data schema,
 * giving the full envelope schema. The name is the last subject token.
 */
export function defineEvent<A extends Aggregate, N extends string, D extends z.ZodType>(aggregate: A, name: N, data: D, schemaVersion = 1) {
  const type = `${aggregate}.${name}` as `${A}.${N}`;
  return {
    aggregate, name, type, schemaVersion,
    schema: EnvelopeBase.extend({ type: z.literal(type), schemaVersion: z.literal(schemaVersion), data }).strict(),
  } as const;
}
