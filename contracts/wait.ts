import { z } from "zod";

/**
 * A `wait` step (docs/control-flow.md "Waits"): the run waits, holding no worker, until a principal
 * allowed by `resolvers` sends the signal `name` (`POST /v1/runs/:id/signals/:name`) with a payload
 * that fits `schema`, or until `timeoutMs` passes; then `onTimeout` says whether the step fails with
 * `wait-timeout` or completes with `defaultOutput`. The step's output is the signal's payload.
 */
export const WAIT_LIMITS = {
  maxTimeoutMs: 30 * 86_400_000,
  maxSchemaBytes: 8 * 1024,
  maxPayloadBytes: 32 * 1024,
  maxResolvers: 32,
} as const;

const label = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;
export const WaitName = z.string().regex(label, "a wait name is lowercase [a-z0-9-], at most 63 characters");
/** `token:<name>` (a tenant token's name) or `role:<role>` (a role tenant tokens carry), from DROVER_CONFIG tokens. */
export const WaitResolver = z
  .string()
  .regex(/^(?:token|role):[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/, "a resolver is token:<name> or role:<role>");

export const WaitParams = z
  .object({
    name: WaitName.describe("the signal that resolves it: POST /v1/runs/:id/signals/<name>"),
    schema: z
      .record(z.string(), z.json())
      .optional()
      .describe("JSON Schema (the subset zod's fromJSONSchema reads; no pattern) the payload must fit"),
    timeoutMs: z.number().int().min(1).max(WAIT_LIMITS.maxTimeoutMs),
    onTimeout: z.enum(["fail", "continue"]).default("fail").describe("fail with wait-timeout, or continue"),
    defaultOutput: z.json().optional().describe("the step's output when it continues after a timeout"),
    resolvers: z
      .array(WaitResolver)
      .min(1)
      .max(WAIT_LIMITS.maxResolvers)
      .optional()
      .describe("who may resolve it; default: every token of the run's tenant"),
  })
  .strict();
export type WaitParams = z.infer<typeof WaitParams>;

/** Keywords refused in a payload schema: a tenant's regular expression would run on the API (ReDoS). */
const REFUSED_KEYWORDS = new Set(["pattern", "patternProperties", "$dynamicRef", "$id"]);

function refusedKeyword(v: unknown): string | undefined {
  if (Array.isArray(v)) {
    for (const x of v) {
      const k = refusedKeyword(x);
      if (k) return k;
    }
  } else if (v !== null && typeof v === "object") {
    for (const [k, x] of Object.entries(v)) {
      if (REFUSED_KEYWORDS.has(k)) return k;
      const inner = refusedKeyword(x);
      if (inner) return inner;
    }
  }
  return undefined;
}

/** The payload checker of a wait's schema, or the reason the schema is unusable. */
export function payloadChecker(
  schema: Record<string, unknown> | undefined,
): { ok: true; check: (payload: unknown) => string | undefined } | { ok: false; error: string } {
  if (schema === undefined) return { ok: true, check: () => undefined };
  const size = new TextEncoder().encode(JSON.stringify(schema)).length;
  if (size > WAIT_LIMITS.maxSchemaBytes)
    return { ok: false, error: `schema is ${size} bytes, more than ${WAIT_LIMITS.maxSchemaBytes}` };
  const refused = refusedKeyword(schema);
  if (refused) return { ok: false, error: `schema keyword "${refused}" is not supported` };
  let zs: z.ZodType;
  try {
    zs = z.fromJSONSchema(schema as Parameters<typeof z.fromJSONSchema>[0]);
  } catch (e) {
    return { ok: false, error: `schema: ${(e as Error).message}` };
  }
  return {
    ok: true,
    check: (payload) => {
      const r = zs.safeParse(payload);
      if (r.success) return undefined;
      const i = r.error.issues[0];
      return `${i?.path.length ? i.path.join(".") + ": " : ""}${i?.message ?? "does not fit the schema"}`;
    },
  };
}

interface Checkable {
  readonly id: string;
  readonly kind?: string;
  readonly params?: unknown;
  readonly map?: unknown;
  readonly timeoutMs?: unknown;
}

/** Submission checks of wait steps: names unique, schema usable, a default that fits, no map, no attempt timeout. */
export function waitIssues(steps: readonly Checkable[]): string[] {
  const issues: string[] = [];
  const names = new Map<string, string>();
  for (const s of steps) {
    if (s.kind !== "wait") continue;
    const p = s.params as WaitParams;
    const other = names.get(p.name);
    if (other) issues.push(`steps "${other}" and "${s.id}" wait for the same signal "${p.name}"`);
    names.set(p.name, s.id);
    if (s.map !== undefined) issues.push(`wait step "${s.id}" cannot be a map`);
    if (s.timeoutMs !== undefined) issues.push(`wait step "${s.id}": its timeout is params.timeoutMs`);
    const c = payloadChecker(p.schema);
    if (!c.ok) {
      issues.push(`wait step "${s.id}": ${c.error}`);
      continue;
    }
    if (p.onTimeout === "continue" && p.defaultOutput === undefined)
      issues.push(`wait step "${s.id}": onTimeout continue needs a defaultOutput`);
    if (p.onTimeout === "fail" && p.defaultOutput !== undefined)
      issues.push(`wait step "${s.id}": defaultOutput is only for onTimeout continue`);
    const bad = p.defaultOutput === undefined ? undefined : c.check(p.defaultOutput);
    if (bad) issues.push(`wait step "${s.id}": defaultOutput does not fit the schema: ${bad}`);
  }
  return issues;
}

/**
 * Whether a tenant credential may resolve a wait: any of the tenant's tokens when the wait names
 * no resolvers, else a token whose name (`token:<name>`) or one of whose roles (`role:<role>`) is listed.
 */
export function mayResolve(
  resolvers: readonly string[] | undefined,
  who: { readonly name?: string; readonly roles?: readonly string[] },
): boolean {
  if (resolvers === undefined) return true;
  return resolvers.some(
    (r) =>
      (r.startsWith("token:") && who.name !== undefined && r.slice(6) === who.name) ||
      (r.startsWith("role:") && (who.roles ?? []).includes(r.slice(5))),
  );
}
