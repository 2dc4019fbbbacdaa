import { createPrivateKey, createPublicKey, sign, verify, type KeyObject } from "node:crypto";
import { fromSeed, type KeyPair } from "@nats-io/nkeys";

const ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";

/** RFC 4648 base32 without padding (an nkey's encoding: prefix byte(s), raw key, CRC-16). */
function base32(s: string): Uint8Array {
  const out: number[] = [];
  let bits = 0;
  let value = 0;
  for (const c of s) {
    const v = ALPHABET.indexOf(c);
    if (v < 0) throw new Error("not an nkey (base32)");
    value = (value << 5) | v;
    bits += 5;
    if (bits >= 8) {
      bits -= 8;
      out.push((value >>> bits) & 0xff);
    }
  }
  return Uint8Array.from(out);
}

const jwkKey = (raw: Uint8Array) => Buffer.from(raw).toString("base64url");

/**
 * The key pair of an nkey seed (`S…`) whose public key is derived once and whose signatures are
 * node's native Ed25519. nkeys' own pair derives the key pair from the seed again, in JavaScript
 * (tweetnacl), for every `getPublicKey()` and `sign()`: one runtime credential took ~6 of those
 * derivations and 2 signatures, tens of CPU-milliseconds in the provisioner's event loop, for each
 * runtime connect (a warm member's bind waited seconds for them at load ~20). Ed25519 signatures
 * are deterministic: the bytes are the same as nkeys' (native-keys.unit.test.ts). The private key
 * is derived once too: @nats-io/jwt's `encodeUser` checks the issuer's seed with `getPrivateKey()`,
 * one more JavaScript derivation (~10 CPU-ms in the provisioner's loop) per runtime credential.
 */
export function nativeKeyPair(seed: string): KeyPair {
  const kp = fromSeed(new TextEncoder().encode(seed));
  const publicKey = kp.getPublicKey();
  // A seed is 2 prefix bytes, the 32-byte Ed25519 seed, a CRC-16; a public key 1 prefix byte, 32 bytes, a CRC-16.
  const d = base32(seed).subarray(2, 34);
  const x = base32(publicKey).subarray(1, 33);
  const key = createPrivateKey({ key: { kty: "OKP", crv: "Ed25519", d: jwkKey(d), x: jwkKey(x) }, format: "jwk" });
  const pub = createPublicKey(key);
  const privateKey = kp.getPrivateKey();
  return Object.assign(kp, {
    getPublicKey: () => publicKey,
    getPrivateKey: () => privateKey.slice(),
    sign: (input: Uint8Array) => new Uint8Array(sign(null, input, key)),
    verify: (input: Uint8Array, sig: Uint8Array) => verify(null, input, pub, sig),
  });
}

const publicKeys = new Map<string, KeyObject>();

/** An nkey public key (`N…`, `A…`, `U…`) as a native Ed25519 key object (kept: the server's key never changes). */
function publicKeyOf(nkey: string): KeyObject {
  let k = publicKeys.get(nkey);
  if (!k) {
    k = createPublicKey({
      key: { kty: "OKP", crv: "Ed25519", x: jwkKey(base32(nkey).subarray(1, 33)) },
      format: "jwk",
    });
    if (publicKeys.size < 64) publicKeys.set(nkey, k);
  }
  return k;
}

/**
 * @nats-io/jwt's `decode` (a v1/v2 NATS JWT, its signature verified against its `iss`), verifying
 * natively instead of in JavaScript. Throws on a malformed token or a bad signature.
 */
export function decodeVerified<T>(jwt: string): T {
  const chunks = jwt.split(".");
  if (chunks.length !== 3) throw new Error(`invalid jwt - ${chunks.length} chunks`);
  const h = JSON.parse(Buffer.from(chunks[0]!, "base64url").toString("utf8")) as { typ?: string; alg?: string };
  if (h.typ !== "jwt" && h.typ !== "JWT") throw new Error(`not a nats jwt - typ ${h.typ}`);
  if (h.alg !== "ed25519" && h.alg !== "ed25519-nkey") throw new Error(`not a nats jwt - alg ${h.alg}`);
  const body = JSON.parse(Buffer.from(chunks[1]!, "base64url").toString("utf8")) as T & { iss?: string };
  const payload = h.alg === "ed25519-nkey" ? `${chunks[0]}.${chunks[1]}` : chunks[1]!;
  const sig = Buffer.from(chunks[2]!, "base64url");
  if (typeof body.iss !== "string" || !verify(null, Buffer.from(payload), publicKeyOf(body.iss), sig))
    throw new Error("sig verification failed");
  return body;
}
