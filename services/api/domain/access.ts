import { DroverError, TENANT_SCOPED_AGGREGATES, TenantId, type Credential } from "../../../contracts/index.ts";

/**
 * Who the caller is and what they may read. The tenant comes from the bearer token and from
 * nothing else (identities-and-events.md "Identities"): bodies, labels and headers are never
 * authorization.
 */

/**
 * The configured tokens: the credential a presented bearer token names, if any. Built by
 * shell/token-table.ts, which keeps only SHA-256 digests and compares in constant time.
 */
export interface TokenTable {
  lookup(token: string): Credential | undefined;
}

const BEARER = /^Bearer[ \t]+([\x21-\x7e]+)[ \t]*$/i;

/**
 * The credential named by an `Authorization: Bearer <token>` header.
 * Throws `unauthenticated` when the header is missing, malformed, or names no configured token;
 * the message never echoes the token.
 */
export function authenticate(tokens: TokenTable, authorization: string | undefined): Credential {
  if (authorization === undefined || authorization === "")
    throw new DroverError("unauthenticated", "an Authorization: Bearer <token> header is required");
  const token = BEARER.exec(authorization)?.[1];
  const credential = token === undefined ? undefined : tokens.lookup(token);
  if (credential === undefined) throw new DroverError("unauthenticated", "the bearer token is not recognised");
  return credential;
}

/** Throws `forbidden` unless the credential is an operator's. */
export function requireOperator(credential: Credential): void {
  if (credential.role !== "operator") throw new DroverError("forbidden", "this operation needs an operator credential");
}

/** The scope of an event feed: one tenant's subjects, or (operators only) everything. */
export type FeedScope = { readonly kind: "tenant"; readonly tenantId: TenantId } | { readonly kind: "all" };

/**
 * The tenant a read is scoped to. A tenant credential reads its own tenant; naming another one
 * with `?tenant=` is `forbidden` (the parameter is an operator's tool, and the answer reveals
 * nothing about the other tenant). An operator must name the tenant (`contract-violation`
 * otherwise); a value that is not a TenantId is `invalid-id`.
 */
export function readTenant(credential: Credential, requested: string | undefined): TenantId {
  const scope = feedScope(credential, requested);
  if (scope.kind === "all")
    throw new DroverError("contract-violation", "operators name the tenant to read with ?tenant=<tenantId>");
  return scope.tenantId;
}

/** Like {@link readTenant}, but an operator who names no tenant reads every subject. */
export function feedScope(credential: Credential, requested: string | undefined): FeedScope {
  const tenant = requested === undefined ? undefined : parseTenant(requested);
  if (credential.role === "tenant") {
    if (tenant !== undefined && tenant !== credential.tenantId)
      throw new DroverError("forbidden", "only operator credentials may name a tenant");
    return { kind: "tenant", tenantId: credential.tenantId };
  }
  return tenant === undefined ? { kind: "all" } : { kind: "tenant", tenantId: tenant };
}

function parseTenant(value: string): TenantId {
  const r = TenantId.safeParse(value);
  if (!r.success)
    throw new DroverError("invalid-id", "tenant must be a TenantId: lowercase [a-z0-9-], at most 63 characters");
  return r.data;
}

/**
 * Whether an event read from the stream may be shown in `scope`. The subject filter already
 * confines a tenant feed; this re-checks the event itself (tenant-scoped aggregate, same tenant)
 * so a subject that merely looks like the tenant's (e.g. a runtime whose id equals a tenant id,
 * which `<prefix>.*.<tenant>.>` also matches) can never leak into it.
 */
export function visibleIn(
  scope: FeedScope,
  event: { readonly type: string; readonly tenantId?: string | undefined },
): boolean {
  if (scope.kind === "all") return true;
  const aggregate = event.type.slice(0, event.type.indexOf("."));
  return (TENANT_SCOPED_AGGREGATES as readonly string[]).includes(aggregate) && event.tenantId === scope.tenantId;
}

/**
 * Whether a stored message that does not decode may be reported in `scope`, judged by its subject
 * tokens after the prefix (`<aggregate>.<tenant>.<id>.<event>`): the tenant's own tenant-scoped
 * subjects only, so a broken message is reported to whom it belongs and to nobody else.
 */
export function subjectVisibleIn(scope: FeedScope, tokens: readonly string[]): boolean {
  if (scope.kind === "all") return true;
  const [aggregate, tenant] = tokens;
  return (
    (TENANT_SCOPED_AGGREGATES as readonly string[]).includes(aggregate ?? "") &&
    tenant === scope.tenantId &&
    tokens.length === 4
  );
}
