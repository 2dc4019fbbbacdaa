import { createHash } from "node:crypto";

/** Kubernetes object names (DNS-1123 labels, as Services require) and label values are at most 63 characters. */
export const MAX_NAME = 63;
const HASH_HEX = 12;

/** The first 12 hex digits of sha256(value): the stable part of every name derived from a RuntimeInstanceId. */
export function shortHash(value: string): string {
  return createHash("sha256").update(value).digest("hex").slice(0, HASH_HEX);
}

// Lowercase, every run of characters outside [a-z0-9] becomes one '-', no '-' at either end.
function dnsReadable(s: string): string {
  return s
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-+|-+$/g, "");
}

/**
 * `<prefix>-<suffix>-<12 hex of sha256(runtimeInstanceId)>` as a DNS-1123 label of at most 63
 * characters. The readable part is lowercased, sanitized and cut so the hash always survives: two
 * long ids sharing their first 50 characters still get different names, and every start of one
 * RuntimeInstanceId computes the same name (that is what makes duplicate starts converge). Never
 * throws; an empty readable part leaves just the hash (which starts with a letter or digit).
 */
export function resourceName(prefix: string, suffix: string, runtimeInstanceId: string): string {
  const hash = shortHash(runtimeInstanceId);
  const readable = dnsReadable(`${prefix}-${suffix}`)
    .slice(0, MAX_NAME - HASH_HEX - 1)
    .replace(/-+$/, "");
  return readable ? `${readable}-${hash}` : hash;
}

const LABEL_VALUE = /^(?:[A-Za-z0-9](?:[A-Za-z0-9_.-]*[A-Za-z0-9])?)?$/;

/**
 * A label value carrying `value`: the value itself when it is a valid label value (≤ 63
 * characters, alphanumeric at both ends, `-_.` inside), else a readable prefix plus the 12-hex hash
 * of the full value, so selection by label stays exact and unambiguous. The full value always goes
 * into an annotation as well (labels are for selection; annotations are the record).
 */
export function labelValue(value: string): string {
  if (value.length <= MAX_NAME && LABEL_VALUE.test(value)) return value;
  const readable = value
    .replace(/[^A-Za-z0-9_.-]+/g, "-")
    .replace(/^[^A-Za-z0-9]+/, "")
    .slice(0, MAX_NAME - HASH_HEX - 1)
    .replace(/[^A-Za-z0-9]+$/, "");
  return readable ? `${readable}-${shortHash(value)}` : shortHash(value);
}
