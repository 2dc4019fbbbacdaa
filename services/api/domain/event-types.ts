import { TENANT_SCOPED_AGGREGATES } from "../../../contracts/index.ts";
import type { FeedScope } from "./access.ts";

const wantedOf = (types: string | undefined): string[] =>
  (types ?? "")
    .split(",")
    .map((t) => t.trim())
    .filter((t) => t !== "");

/**
 * A predicate for `?types=run.*,exec.step-completed`: an exact event type, or `<aggregate>.*` for
 * every event of that aggregate. No list (or an empty one) keeps everything. Pure.
 */
export function typeFilter(types: string | undefined): (type: string) => boolean {
  const wanted = wantedOf(types);
  if (wanted.length === 0) return () => true;
  const exact = new Set(wanted.filter((t) => !t.endsWith(".*")));
  const prefixes = wanted.filter((t) => t.endsWith(".*")).map((t) => t.slice(0, -1));
  return (type) => exact.has(type) || prefixes.some((p) => type.startsWith(p));
}

const TOKEN = "[a-z][a-z0-9-]*";
const TYPE = new RegExp(`^(${TOKEN})\\.(${TOKEN}|\\*)$`);

/**
 * The subjects (after the stream's prefix, no overlap) that carry exactly the events `?types=`
 * keeps in `scope`, so the server sends a feed only those instead of every event of the scope for
 * the API to decode and drop (a W2 client awaiting run ends would otherwise be sent every step).
 * Subjects are `<aggregate>.<tenant>.<id>.<event>`, `runtime.<id>.<event>`; a tenant sees
 * tenant-scoped aggregates only. `undefined`: no list, or nothing in it can match in the scope
 * (the feed then reads the whole scope and {@link typeFilter} keeps nothing). Pure.
 */
export function typeSubjects(types: string | undefined, scope: FeedScope): string[] | undefined {
  const byAggregate = new Map<string, Set<string>>();
  for (const t of wantedOf(types)) {
    const m = TYPE.exec(t);
    if (!m) continue; // no event type looks like this: it matches nothing
    const [, aggregate, name] = m as unknown as [string, string, string];
    if (scope.kind === "tenant" && !(TENANT_SCOPED_AGGREGATES as readonly string[]).includes(aggregate)) continue;
    const names = byAggregate.get(aggregate) ?? new Set<string>();
    byAggregate.set(aggregate, names.add(name));
  }
  if (byAggregate.size === 0) return undefined;
  const out: string[] = [];
  for (const [aggregate, names] of byAggregate) {
    const scoped =
      aggregate === "runtime" ? aggregate : `${aggregate}.${scope.kind === "tenant" ? scope.tenantId : "*"}`;
    // `<aggregate>.*` covers its exact types too: overlapping filters are refused by the server.
    if (names.has("*")) out.push(`${scoped}.>`);
    else for (const n of names) out.push(`${scoped}.*.${n}`);
  }
  return out;
}
