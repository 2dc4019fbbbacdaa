import { encodeAuthorizationResponse, encodeUser } from "@nats-io/jwt";
import { createAccount, createServer, createUser } from "@nats-io/nkeys";
import { afterEach, describe, expect, it, vi } from "vitest";
import { encodeAuthorizationResponseNow, encodeUserNow } from "./native-jwt.ts";
import { nativeKeyPair } from "./native-keys.ts";

const text = new TextDecoder();

describe("the auth callout's synchronous JWT encoders", () => {
  afterEach(() => vi.useRealTimers());

  it("mint the same user JWT, byte for byte, as @nats-io/jwt's encodeUser", async () => {
    vi.useFakeTimers({ toFake: ["Date"], now: Date.UTC(2026, 11, 6, 10, 0, 0) });
    for (let i = 0; i < 3; i++) {
      const issuer = nativeKeyPair(text.decode(createAccount().getSeed()));
      const user = createUser().getPublicKey();
      const perms = {
        pub: { allow: [`drover.events.exec.t${i}.*.*`, "$JS.API.INFO"], deny: ["$JS.API.CONSUMER.>"] },
        sub: { allow: [`_INBOX_rt-${i}.>`], deny: [] },
      };
      const opts = { aud: "DROVER", exp: 1_800_000_000 + i };
      const lib = await encodeUser(`rt-${i}`, user, issuer, structuredClone(perms), opts);
      expect(encodeUserNow(`rt-${i}`, user, issuer, structuredClone(perms), opts)).toBe(lib);
    }
  });

  it("mint the same authorization response, granted or refused, as encodeAuthorizationResponse", async () => {
    vi.useFakeTimers({ toFake: ["Date"], now: Date.UTC(2026, 11, 6, 10, 0, 0) });
    const issuer = nativeKeyPair(text.decode(createAccount().getSeed()));
    const user = createUser().getPublicKey();
    const server = createServer().getPublicKey();
    for (const data of [{ jwt: "a.b.c" }, { error: "runtime fenced or retired" }]) {
      const lib = await encodeAuthorizationResponse(user, server, issuer, { ...data }, {});
      expect(encodeAuthorizationResponseNow(user, server, issuer, { ...data })).toBe(lib);
    }
  });

  it("refuse keys of the wrong kind as encodeUser does", () => {
    const issuer = nativeKeyPair(text.decode(createAccount().getSeed()));
    const notAUser = createAccount().getPublicKey();
    expect(() => encodeUserNow("rt-a", notAUser, issuer, {}, { aud: "DROVER", exp: 1 })).toThrow(/unexpected type/);
    expect(() =>
      encodeAuthorizationResponseNow(createUser().getPublicKey(), createUser().getPublicKey(), issuer, {}),
    ).toThrow(/unexpected type/);
  });
});
