import { timingSafeEqual } from "node:crypto";
import type { JetStreamManager } from "@nats-io/jetstream";
import type { AuthorizationRequest } from "@nats-io/jwt";
import type { NatsConnection, Subscription } from "@nats-io/transport-node";
import { isSubjectSafeId } from "../../contracts/index.ts";
import type { StreamLayout } from "../../streams/index.ts";
import { runtimePasswordFor, runtimeRights, type RuntimeTenants } from "./runtime-rights.ts";
import { scopeOf } from "./rights.ts";
import { DROVER_ACCOUNT } from "./server-config.ts";
import { decodeVerified, nativeKeyPair } from "./native-keys.ts";
import { encodeAuthorizationResponseNow, encodeUserNow } from "./native-jwt.ts";

/** The runtime facts the callout decides on, from the runtime aggregate in the log. */
export interface RuntimeStanding {
  /** Absent: never registered on this layout. */
  readonly tenants?: RuntimeTenants;
  /** `fenced` or `retired` is in the log: its credentials are dead. */
  readonly ended: boolean;
}

/** Reads a runtime's standing with last-by-subject gets of its `registered`, `fenced` and `retired` events. */
export function standingFromLog(jsm: JetStreamManager, layout: StreamLayout) {
  const last = (id: string, name: string) =>
    jsm.direct.getMessage(layout.eventStream, { last_by_subj: `${layout.eventPrefix}.runtime.${id}.${name}` });
  return async (id: string): Promise<RuntimeStanding> => {
    const [reg, fenced, retired] = await Promise.all([last(id, "registered"), last(id, "fenced"), last(id, "retired")]);
    if (!reg) return { ended: fenced !== null || retired !== null };
    const data = (reg.json() as { data?: { tenantId?: string; tenantGroupId?: string } }).data ?? {};
    const tenants = data.tenantId && !data.tenantGroupId ? [data.tenantId] : ["*"];
    return { tenants, ended: fenced !== null || retired !== null };
  };
}

export interface CalloutOptions {
  readonly nc: NatsConnection;
  readonly layout: StreamLayout;
  /** DROVER_COMMAND_SECRET: runtime passwords are derived from it (runtime-rights.ts). */
  readonly secret: string;
  /** DROVER_NATS_CALLOUT_SEED: the account key (`SA…`) the server trusts as the callout issuer. */
  readonly issuerSeed: string;
  /** Lifetime of a minted runtime user; at expiry the server disconnects it and its reconnect asks again. */
  readonly ttlMs: number;
  readonly standing: (runtimeInstanceId: string) => Promise<RuntimeStanding>;
  readonly now: () => number;
  readonly log?: (fields: Record<string, unknown>, msg: string) => void;
}

const sameSecret = (a: string, b: string): boolean =>
  a.length === b.length && timingSafeEqual(Buffer.from(a), Buffer.from(b));

/**
 * The NATS auth callout for runtimes: every connection that is not a configured service identity
 * is delegated here. A runtime connects with user = its RuntimeInstanceId and the password derived
 * for it; a password of another layout is left to that layout's callout (silence). Registered,
 * neither fenced nor retired → a user JWT with `runtimeRights`, expiring after `ttlMs`; fenced or
 * retired → refused, so once fenced its credentials stop working at the next connect or expiry.
 */
export function startRuntimeCallout(o: CalloutOptions): Subscription {
  // Native Ed25519 (native-keys.ts): nkeys' JavaScript signing cost tens of CPU-ms per runtime connect.
  const issuer = nativeKeyPair(o.issuerSeed);
  const td = new TextDecoder();
  const scope = scopeOf(o.layout);
  const answer = async (raw: Uint8Array): Promise<string | undefined> => {
    const req = decodeVerified<{ nats: AuthorizationRequest }>(td.decode(raw)).nats;
    const user = req.connect_opts.user ?? "";
    const pass = req.connect_opts.pass ?? "";
    if (!isSubjectSafeId(user) || !sameSecret(pass, runtimePasswordFor(o.secret, o.layout.eventPrefix, user)))
      return undefined; // not one of ours
    const t0 = performance.now();
    const st = await o.standing(user);
    const read = performance.now();
    const refuse = !st.tenants ? "runtime not registered" : st.ended ? "runtime fenced or retired" : undefined;
    // Minted synchronously from the standing on: no await (thread-pool hop) between the read and the answer.
    const data = refuse
      ? { error: refuse }
      : {
          jwt: encodeUserNow(user, req.user_nkey, issuer, toJwtPermissions(runtimeRights(scope, user, st.tenants!)), {
            aud: DROVER_ACCOUNT,
            exp: Math.floor((o.now() + o.ttlMs) / 1000),
          }),
        };
    const response = encodeAuthorizationResponseNow(req.user_nkey, req.server_id.id, issuer, data);
    // Where a runtime connect's wait goes: the standing's reads, then minting the answer.
    const readMs = Math.round(read - t0);
    const mintMs = Math.round(performance.now() - read);
    o.log?.({ runtimeInstanceId: user, refused: refuse ?? null, readMs, mintMs }, "runtime nats credentials");
    return response;
  };
  return o.nc.subscribe("$SYS.REQ.USER.AUTH", {
    callback: (err, m) => {
      if (err) return;
      answer(m.data).then(
        (r) => {
          if (r !== undefined) m.respond(r);
        },
        (e: unknown) => o.log?.({ err: String(e) }, "auth callout failed"),
      );
    },
  });
}

function toJwtPermissions(r: ReturnType<typeof runtimeRights>) {
  return {
    pub: { allow: [...r.publish.allow], deny: [...r.publish.deny] },
    sub: { allow: [...r.subscribe.allow], deny: [...r.subscribe.deny] },
  };
}
