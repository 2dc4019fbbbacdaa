import { createAccount, createUser } from "@nats-io/nkeys";
import { COMPACTOR, KICKER, producerIdentity, SERVICE_IDENTITIES, type Identity } from "./rights.ts";

/**
 * One party's NATS credential, the value of NATS_CREDS: `<name>:<secret>`. For a service identity the
 * secret is its nkey seed (`SU…`: the server knows only the public key and checks a signed nonce);
 * for a runtime it is the password the provisioner derived for its RuntimeInstanceId, which the
 * auth callout checks before it mints the runtime's user (callout.ts). `name` also names the
 * connection's private inbox prefix (`_INBOX_<name>`), the only replies it may read.
 */
export interface NatsCredential {
  readonly name: string;
  readonly secret: string;
}

export function parseCredential(text: string): NatsCredential {
  const i = text.indexOf(":");
  const name = text.slice(0, i).trim();
  const secret = text.slice(i + 1).trim();
  if (i <= 0 || !/^[a-z0-9-]{1,120}$/.test(name) || secret === "")
    throw new Error("NATS_CREDS must be `<name>:<nkey seed or password>`");
  return { name, secret };
}

export const formatCredential = (c: NatsCredential): string => `${c.name}:${c.secret}`;

/** The keys of one deployment: a seed per identity and the account key the auth callout signs runtimes with. */
export interface NatsKeys {
  readonly seeds: Readonly<Partial<Record<Identity, string>>>;
  /** Public nkeys (`U…`) by identity, what the server configuration names. */
  readonly publicKeys: Readonly<Partial<Record<Identity, string>>>;
  /** Account seed (`SA…`) of the callout issuer: only the provisioner holds it (DROVER_NATS_CALLOUT_SEED). */
  readonly calloutSeed: string;
  readonly calloutIssuer: string;
}

const td = new TextDecoder();

/** Fresh random keys for every service identity and the kicker (and `harness` when `harness`: test servers only). */
export function generateKeys(opts: { harness?: boolean; producers?: readonly string[] } = {}): NatsKeys {
  const ids: Identity[] = [
    ...SERVICE_IDENTITIES,
    KICKER,
    COMPACTOR,
    ...(opts.harness ? (["harness"] as const) : []),
    ...(opts.producers ?? []).map(producerIdentity),
  ];
  const seeds: Partial<Record<Identity, string>> = {};
  const publicKeys: Partial<Record<Identity, string>> = {};
  for (const id of ids) {
    const kp = createUser();
    seeds[id] = td.decode(kp.getSeed());
    publicKeys[id] = kp.getPublicKey();
  }
  const issuer = createAccount();
  return { seeds, publicKeys, calloutSeed: td.decode(issuer.getSeed()), calloutIssuer: issuer.getPublicKey() };
}

/** The NATS_CREDS value of `id` from `keys`. */
export function credentialOf(keys: NatsKeys, id: Identity): string {
  const seed = keys.seeds[id];
  if (!seed) throw new Error(`no NATS key for identity ${id}`);
  return formatCredential({ name: id, secret: seed });
}
