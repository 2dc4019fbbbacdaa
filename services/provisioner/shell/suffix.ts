import { randomBytes } from "node:crypto";
import { RUNTIME_SUFFIX_LENGTH } from "../domain/runtime-id.ts";

const ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789";

/** 12 random characters of [a-z0-9] (≈ 62 bits): the unique part of a new RuntimeInstanceId. */
export function randomSuffix(): string {
  const bytes = randomBytes(RUNTIME_SUFFIX_LENGTH * 2);
  let out = "";
  // Rejection sampling keeps every character equally likely (256 is not a multiple of 36).
  for (const b of bytes) {
    if (b < 252) out += ALPHABET[b % 36];
    if (out.length === RUNTIME_SUFFIX_LENGTH) return out;
  }
  return out + randomSuffix().slice(out.length);
}
