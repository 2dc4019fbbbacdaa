import ipaddr from "ipaddr.js";
import { z } from "zod";

/** A parsed allowlist entry: a host name (any port or one port), or an address range (any port or one port). */
export type EgressRule =
  | { readonly kind: "host"; readonly host: string; readonly port?: number }
  | { readonly kind: "cidr"; readonly range: [ipaddr.IPv4 | ipaddr.IPv6, number]; readonly port?: number };

const HOST_NAME =
  /^(?=.{1,253}$)[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?(?:\.[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?)*$/;

function portOf(s: string): number | undefined | null {
  if (!/^\d{1,5}$/.test(s)) return null;
  const n = Number(s);
  return n >= 1 && n <= 65_535 ? n : null;
}

function addressRule(addr: string, port?: number): EgressRule | undefined {
  if (addr.includes("/")) {
    if (!ipaddr.isValidCIDR(addr)) return undefined;
    return { kind: "cidr", range: ipaddr.parseCIDR(addr), ...(port === undefined ? {} : { port }) };
  }
  if (!ipaddr.isValid(addr)) return undefined;
  const a = ipaddr.process(addr);
  return { kind: "cidr", range: [a, a.kind() === "ipv4" ? 32 : 128], ...(port === undefined ? {} : { port }) };
}

/**
 * Parses one `egress.allow` entry: `host`, `host:port`, an address (`10.1.2.3`, `::1`), `addr:port`
 * (`10.1.2.3:8080`, `[::1]:8080`) or a CIDR (`10.0.0.0/8`, `fd00::/8`). Names are compared
 * lowercase with the URL's host name; addresses and CIDRs with every address the name resolves to.
 * Returns undefined for anything else.
 */
export function parseEgressRule(entry: string): EgressRule | undefined {
  const s = entry.trim().toLowerCase();
  const bracketed = /^\[([0-9a-f:.]+)\](?::(\d+))?$/.exec(s);
  if (bracketed) {
    const port = bracketed[2] === undefined ? undefined : portOf(bracketed[2]);
    return port === null ? undefined : addressRule(bracketed[1] ?? "", port);
  }
  if (ipaddr.isValid(s) || s.includes("/")) return addressRule(s);
  const colon = s.lastIndexOf(":");
  const [host, port] = colon < 0 ? [s, undefined] : [s.slice(0, colon), portOf(s.slice(colon + 1))];
  if (port === null) return undefined;
  if (ipaddr.IPv4.isValidFourPartDecimal(host)) return addressRule(host, port);
  return HOST_NAME.test(host) ? { kind: "host", host, ...(port === undefined ? {} : { port }) } : undefined;
}

export const DEFAULT_MAX_RESPONSE_BYTES = 5 * 1024 * 1024;

/**
 * A tenant's egress policy for `http` and `llm` steps (docs/security.md "Egress"). Public unicast
 * addresses are always reachable; loopback, private, link-local (cloud metadata), unique-local,
 * carrier-grade NAT, multicast, unspecified and other special-purpose addresses only when `allow`
 * names them. `maxResponseBytes` caps a response body (`response-too-large`).
 */
export const EgressSettings = z
  .object({
    allow: z
      .array(
        z
          .string()
          .min(1)
          .max(300)
          .refine((e) => parseEgressRule(e) !== undefined, {
            message: "an egress.allow entry is host, host:port, an address, [v6]:port or a CIDR",
          }),
      )
      .max(256)
      .default([]),
    maxResponseBytes: z
      .number()
      .int()
      .min(1024)
      .max(256 * 1024 * 1024)
      .default(DEFAULT_MAX_RESPONSE_BYTES),
  })
  .strict();
export type EgressSettings = z.infer<typeof EgressSettings>;

/** What a runtime is told (DROVER_EGRESS): the egress settings of each tenant it may run, by TenantId. */
export const EgressByTenant = z.record(z.string(), EgressSettings);
export type EgressByTenant = z.infer<typeof EgressByTenant>;
