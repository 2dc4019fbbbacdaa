import { z } from "zod";
import { EnvelopeBase } from "./envelope.ts";
import { TenantId } from "./ids.ts";
import { memo } from "./memo.ts";

/** The aggregates of the DROVER stream; each is the second subject token (`drover.<aggregate>...`). */
export const AGGREGATES = [
  "run",
  "exec",
  "scaleout",
  "runtime",
  "forensics",
  "schedule",
  "flowkey",
  "quota",
  "worker",
] as const;
export type Aggregate = (typeof AGGREGATES)[number];

/**
 * Aggregates whose subjects carry a tenant scope (`drover.<aggregate>.<tenant>.<id>.<event>`).
 * Their events must carry `tenantId` in the envelope: visibility is evaluated from the event's own
 * tenant and there is no "no tenant means everyone" path (admission-and-capacity.md "Visibility").
 */
export const TENANT_SCOPED_AGGREGATES = [
  "run",
  "exec",
  "scaleout",
  "forensics",
  "schedule",
  "flowkey",
  "quota",
  "worker",
] as const satisfies readonly Aggregate[];

/** `tenantId` is required on tenant-scoped aggregates and optional on `runtime` (a shared runtime has no tenant). */
type TenantIdField<A extends Aggregate> = A extends "runtime" ? z.ZodOptional<typeof TenantId> : typeof TenantId;

/**
 * Defines one event: its literal `type` (`<aggregate>.<name>`), schema version and data schema,
 * giving the full envelope schema. The name is the last subject token. The data schema (`data`
 * builds it) and the envelope are built when `schema` is first read (memo.ts): a process builds
 * only the schemas of the events it appends or decodes, not all of the catalogue's at import.
 */
export function defineEvent<A extends Aggregate, N extends string, D extends z.ZodType>(
  aggregate: A,
  name: N,
  data: () => D,
  schemaVersion = 1,
) {
  const type = `${aggregate}.${name}` as `${A}.${N}`;
  const tenantId = (aggregate === "runtime" ? TenantId.optional() : TenantId) as TenantIdField<A>;
  const schema = memo(() =>
    EnvelopeBase.extend({
      type: z.literal(type),
      schemaVersion: z.literal(schemaVersion),
      tenantId,
      data: data(),
    }).strict(),
  );
  return {
    aggregate,
    name,
    type,
    schemaVersion,
    get schema() {
      return schema();
    },
  } as const;
}
