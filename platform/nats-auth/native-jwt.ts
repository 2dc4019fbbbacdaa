import { createHash } from "node:crypto";
import { checkKey } from "@nats-io/jwt";
import type { KeyPair } from "@nats-io/nkeys";

/** A NATS v2 JWT's claims as @nats-io/jwt builds them before `encode` adds `iss`, `iat`, `jti` and the version. */
interface Claims {
  [k: string]: unknown;
  nats: Record<string, unknown>;
}

/** base64url of a string's char codes as bytes (btoa's semantics: our claims are ASCII JSON). */
function b64url(s: string): string {
  // eslint-disable-next-line no-control-regex
  if (!/^[\u0000-\u00ff]*$/.test(s)) throw new Error("a JWT part holds a character beyond Latin-1");
  return Buffer.from(s, "latin1").toString("base64url");
}

/**
 * @nats-io/jwt's `encode` for v2 (`ed25519-nkey`) JWTs, with the same bytes out, but its `jti`
 * (SHA-512 of the claims) hashed synchronously by node:crypto instead of `crypto.subtle.digest`:
 * each subtle digest is a hop through libuv's thread pool and back, two per runtime credential,
 * and at load the auth callout's answer waited on them (the callout timing's signing part was
 * ~70 ms at load 20, its CPU a few ms). Same claim order, same hash, same deterministic Ed25519.
 */
function encodeV2(claim: Claims, kp: KeyPair): string {
  claim.iss = kp.getPublicKey();
  claim.iat = Math.floor(Date.now() / 1000);
  claim.nats.version = 2;
  claim.jti = createHash("sha512").update(JSON.stringify(claim)).digest("base64");
  const payload = `${b64url(JSON.stringify({ typ: "JWT", alg: "ed25519-nkey" }))}.${b64url(JSON.stringify(claim))}`;
  return `${payload}.${Buffer.from(kp.sign(new TextEncoder().encode(payload))).toString("base64url")}`;
}

/**
 * A user JWT as `encodeUser(name, userNkey, issuer, perms, { aud, exp })` builds it (byte for
 * byte: native-jwt.unit.test.ts), synchronous: no thread-pool hop.
 */
export function encodeUserNow(
  name: string,
  userNkey: string,
  issuer: KeyPair,
  user: Record<string, unknown>,
  opts: { readonly aud: string; readonly exp: number },
): string {
  const claim: Claims = {
    exp: opts.exp,
    nbf: undefined,
    aud: opts.aud,
    name,
    sub: checkKey(userNkey, "U").getPublicKey(),
    nats: { data: -1, payload: -1, subs: -1, ...user, type: "user" },
  };
  return encodeV2(claim, checkKey(issuer, "A", true));
}

/**
 * An authorization response JWT as `encodeAuthorizationResponse(userNkey, serverId, issuer, data, {})`
 * builds it (byte for byte: native-jwt.unit.test.ts), synchronous.
 */
export function encodeAuthorizationResponseNow(
  userNkey: string,
  serverId: string,
  issuer: KeyPair,
  data: Record<string, unknown>,
): string {
  const sub = checkKey(userNkey, "U").getPublicKey();
  const aud = checkKey(serverId, "N").getPublicKey();
  const claim: Claims = { exp: undefined, nbf: undefined, aud, sub, nats: { ...data, type: "authorization_response" } };
  return encodeV2(claim, checkKey(issuer, "A", true));
}
