import { decode, encodeUser } from "@nats-io/jwt";
import { createAccount, createUser, fromSeed } from "@nats-io/nkeys";
import nacl from "tweetnacl";
import { describe, expect, it, vi } from "vitest";
import { decodeVerified, nativeKeyPair } from "./native-keys.ts";

const text = new TextDecoder();

describe("native Ed25519 nkeys (the runtime auth callout's signer)", () => {
  it("signs exactly the bytes nkeys' JavaScript signer does, under the same public key, and verifies them", () => {
    for (let i = 0; i < 5; i++) {
      const seed = text.decode(createAccount().getSeed());
      const js = fromSeed(new TextEncoder().encode(seed));
      const native = nativeKeyPair(seed);
      expect(native.getPublicKey()).toBe(js.getPublicKey());
      const input = new TextEncoder().encode(`payload ${i} ${seed.slice(0, 8)}`);
      const sig = native.sign(input);
      expect(Buffer.from(sig).toString("hex")).toBe(Buffer.from(js.sign(input)).toString("hex"));
      expect(js.verify(input, sig)).toBe(true);
      expect(native.verify(input, js.sign(input))).toBe(true);
      expect(native.verify(new TextEncoder().encode("another payload"), sig)).toBe(false);
    }
  });

  it("mints a user JWT without deriving the issuer's key pair in JavaScript, and exports nkeys' private key", async () => {
    const seed = text.decode(createAccount().getSeed());
    const issuer = nativeKeyPair(seed);
    const user = createUser().getPublicKey();
    const derivations = vi.spyOn(nacl.sign.keyPair, "fromSeed");
    try {
      const jwt = await encodeUser("rt-a", user, issuer, { pub: { allow: ["a.>"] } });
      expect(derivations).not.toHaveBeenCalled();
      expect(decodeVerified<{ sub: string; iss: string }>(jwt)).toMatchObject({
        sub: user,
        iss: issuer.getPublicKey(),
      });
    } finally {
      derivations.mockRestore();
    }
    const js = fromSeed(new TextEncoder().encode(seed));
    expect(Buffer.from(issuer.getPrivateKey()).toString("hex")).toBe(Buffer.from(js.getPrivateKey()).toString("hex"));
  });

  it("decodes a NATS JWT as @nats-io/jwt does, and refuses one whose body or signature was changed", async () => {
    const issuer = createAccount();
    const jwt = await encodeUser("rt-a", createUser(), issuer, { pub: { allow: ["a.>"] } });
    expect(decodeVerified(jwt)).toEqual(decode(jwt));
    const [h, b, s] = jwt.split(".") as [string, string, string];
    const body = JSON.parse(Buffer.from(b, "base64url").toString("utf8")) as { name: string };
    const forged = `${h}.${Buffer.from(JSON.stringify({ ...body, name: "rt-b" })).toString("base64url")}.${s}`;
    expect(() => decode(forged)).toThrow(/sig verification failed/);
    expect(() => decodeVerified(forged)).toThrow(/sig verification failed/);
    // Signed by another key than its `iss` names.
    const other = await encodeUser("rt-a", createUser(), createAccount(), {});
    const swapped = `${h}.${b}.${other.split(".")[2]}`;
    expect(() => decodeVerified(swapped)).toThrow(/sig verification failed/);
    expect(() => decodeVerified("a.b")).toThrow(/invalid jwt/);
  });
});
