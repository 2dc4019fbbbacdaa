import { hash, timingSafeEqual } from "node:crypto";
import type { Credential } from "../../../contracts/index.ts";
import type { TokenTable } from "../domain/access.ts";

/** A stored token: `sha256:` and the lowercase hex SHA-256 of the token's UTF-8 bytes. */
export const TOKEN_HASH = /^sha256:([0-9a-f]{64})$/;

// One-shot (no Hash object per request): every authenticated request hashes its token.
const digest = (token: string): Buffer => hash("sha256", token, "buffer");

/** The stored form of a token (`sha256:<hex>`), as `printf %s "$TOKEN" | sha256sum` prints it. */
export function hashToken(token: string): string {
  return `sha256:${digest(token).toString("hex")}`;
}

/**
 * The API's token table from DROVER_CONFIG `tokens`. Keys are `sha256:<hex>` digests (production);
 * a plaintext key is accepted only when `allowPlaintext` (DROVER_DEV=1) and is hashed at load, so
 * the table never holds a token itself. A lookup hashes the presented token and compares it with
 * EVERY stored digest with `timingSafeEqual` (no early exit), so the time taken says nothing about
 * how much of a digest matched or which entry did. Throws at load, naming the count but never a
 * token, when plaintext keys are present without `allowPlaintext`.
 */
export function tokenTable(
  tokens: Readonly<Record<string, Credential>>,
  opts: { readonly allowPlaintext: boolean },
): TokenTable {
  const plaintext = Object.keys(tokens).filter((k) => !TOKEN_HASH.test(k));
  if (plaintext.length > 0 && !opts.allowPlaintext)
    throw new Error(
      `DROVER_CONFIG tokens: ${plaintext.length} token(s) stored in plaintext; store each as sha256:<hex SHA-256 of the token> (printf %s "$TOKEN" | sha256sum), or set DROVER_DEV=1 for a development run`,
    );
  const entries = Object.entries(tokens).map(([key, credential]) => {
    const m = TOKEN_HASH.exec(key);
    return { digest: m ? Buffer.from(m[1] as string, "hex") : digest(key), credential };
  });
  return {
    lookup(token) {
      const presented = digest(token);
      let found: Credential | undefined;
      for (const e of entries) if (timingSafeEqual(presented, e.digest) && found === undefined) found = e.credential;
      return found;
    },
  };
}
