import ipaddr from "ipaddr.js";
import type { EgressRule } from "../../../contracts/index.ts";

/**
 * What an address is, for egress: `public` (global unicast) or the special-purpose class that keeps
 * it out of reach by default. Cloud metadata services live on link-local (169.254.169.254,
 * fe80::a9fe:a9fe), unique-local (fd00:ec2::254) or carrier-grade NAT (100.100.100.200) addresses.
 */
export type AddressClass =
  | "public"
  | "loopback"
  | "private"
  | "link-local"
  | "unique-local"
  | "carrier-grade-nat"
  | "unspecified"
  | "multicast"
  | "broadcast"
  | "special-purpose"
  | "not-an-address";

const V4: Record<string, AddressClass> = {
  unicast: "public",
  loopback: "loopback",
  private: "private",
  linkLocal: "link-local",
  carrierGradeNat: "carrier-grade-nat",
  unspecified: "unspecified",
  multicast: "multicast",
  broadcast: "broadcast",
};
const V6: Record<string, AddressClass> = {
  unicast: "public",
  loopback: "loopback",
  linkLocal: "link-local",
  deprecatedSiteLocal: "private",
  uniqueLocal: "unique-local",
  unspecified: "unspecified",
  multicast: "multicast",
};

/** The class of one literal address; IPv4-mapped IPv6 (::ffff:a.b.c.d) is classed as its IPv4 address. */
export function classifyAddress(address: string): AddressClass {
  if (!ipaddr.isValid(address)) return "not-an-address";
  const a = ipaddr.process(address);
  if (a.kind() === "ipv4") return V4[a.range()] ?? "special-purpose";
  // IPv4-compatible ::a.b.c.d (deprecated) and NAT64/6to4/Teredo embed an IPv4 address a relay
  // might turn into a private one: "public" is only global unicast outside those prefixes.
  const cls = V6[a.range()] ?? "special-purpose";
  return cls === "public" && a.match(ipaddr.parseCIDR("::/96")) ? "special-purpose" : cls;
}

export interface EgressTarget {
  /** The URL's host name, lowercase, without IPv6 brackets. */
  readonly host: string;
  readonly port: number;
  /** One address the host resolved to (or the host itself when it is a literal address). */
  readonly address: string;
}

export type EgressDecision =
  | { readonly allowed: true; readonly by: "public" | "allowlist" }
  | { readonly allowed: false; readonly addressClass: AddressClass };

/** True when an allowlist rule names this target: its host name, or a range holding its address; and its port if the rule has one. */
export function ruleMatches(rule: EgressRule, t: EgressTarget): boolean {
  if (rule.port !== undefined && rule.port !== t.port) return false;
  if (rule.kind === "host") return rule.host === t.host;
  if (!ipaddr.isValid(t.address)) return false;
  const a = ipaddr.process(t.address);
  return a.kind() === rule.range[0].kind() && a.match(rule.range);
}

/**
 * Whether a step may connect to `target`: a public address always; any other address only when an
 * allowlist rule names it. Decided per resolved address, so a name resolving to several addresses is
 * allowed only when every one of them is.
 */
export function egressDecision(rules: readonly EgressRule[], target: EgressTarget): EgressDecision {
  const addressClass = classifyAddress(target.address);
  if (addressClass === "public") return { allowed: true, by: "public" };
  if (rules.some((r) => ruleMatches(r, target))) return { allowed: true, by: "allowlist" };
  return { allowed: false, addressClass };
}
