import type { NatsKeys } from "./credentials.ts";
import {
  COMPACTOR,
  KICKER,
  rightsOf,
  SERVICE_IDENTITIES,
  type AuthScope,
  type Identity,
  type Rights,
} from "./rights.ts";

/** Seconds nats-server waits for a connection's authentication, the auth callout's answer included. */
export const AUTH_TIMEOUT_S = 10;

/** The NATS account every drover party lives in. */
export const DROVER_ACCOUNT = "DROVER";
/** The system account: only the kicker (rights.ts KICK_RIGHTS) is a user of it. */
export const SYSTEM_ACCOUNT = "SYS";

const permissions = (r: Rights) => ({
  publish: { allow: r.publish.allow, ...(r.publish.deny.length ? { deny: r.publish.deny } : {}) },
  subscribe: { allow: r.subscribe.allow },
  ...(r.allowResponses ? { allow_responses: true } : {}),
});

/**
 * The authorization part of a nats-server configuration (JSON is valid nats-server config syntax):
 * one account, one nkey user per service identity with its rights, and the auth callout for
 * everyone else (runtimes), answered by the provisioner and signed with the callout issuer key.
 * No user without credentials exists, so a connection without them is refused. The kicker is the
 * system account's only user (it disconnects fenced runtimes: kick.ts).
 */
export function authConfig(keys: NatsKeys, scopes: readonly AuthScope[]): Record<string, unknown> {
  const ids = (Object.keys(keys.publicKeys) as Identity[]).filter(
    (id) =>
      (SERVICE_IDENTITIES as readonly string[]).includes(id) ||
      id === COMPACTOR ||
      id === "harness" ||
      id.startsWith("producer-"),
  );
  const users = ids.map((id) => ({ nkey: keys.publicKeys[id], permissions: permissions(rightsOf(id, scopes)) }));
  const kicker = keys.publicKeys[KICKER];
  const system = kicker ? [{ nkey: kicker, permissions: permissions(rightsOf(KICKER, scopes)) }] : [];
  return {
    accounts: { [DROVER_ACCOUNT]: { jetstream: "enabled", users }, [SYSTEM_ACCOUNT]: { users: system } },
    system_account: SYSTEM_ACCOUNT,
    authorization: {
      // Seconds a connection may take to authenticate; the default (2 s) is too short for a
      // callout answered by a busy provisioner: the proof on a loaded machine had runtimes refused.
      timeout: AUTH_TIMEOUT_S,
      auth_callout: {
        issuer: keys.calloutIssuer,
        auth_users: [...ids.map((id) => keys.publicKeys[id]), ...(kicker ? [kicker] : [])],
        account: DROVER_ACCOUNT,
      },
    },
  };
}

/**
 * A whole single-server configuration: listen address, JetStream store, and `authConfig`; with
 * `tls` (files from nats-auth/tls.ts) the server accepts TLS clients only (`tls {}`).
 */
export function serverConfig(o: {
  host: string;
  port: number;
  storeDir: string;
  keys: NatsKeys;
  scopes: readonly AuthScope[];
  httpPort?: number;
  tls?: { readonly certFile: string; readonly keyFile: string };
  /** A node of a JetStream cluster (nats-cluster.ts): its unique name and the cluster's routes. */
  cluster?: ClusterNodeConfig;
}): string {
  return JSON.stringify(
    {
      ...(o.cluster ? { server_name: o.cluster.serverName } : {}),
      listen: `${o.host}:${o.port}`,
      ...(o.httpPort !== undefined ? { http: `${o.host}:${o.httpPort}` } : {}),
      ...(o.tls ? { tls: { cert_file: o.tls.certFile, key_file: o.tls.keyFile, timeout: 5 } } : {}),
      jetstream: { store_dir: o.storeDir },
      ...(o.cluster ? { cluster: clusterBlock(o.host, o.cluster) } : {}),
      ...authConfig(o.keys, o.scopes),
    },
    null,
    2,
  );
}

/** One node's place in a cluster: names are unique; routes list every node's route port (its own is ignored). */
export interface ClusterNodeConfig {
  readonly serverName: string;
  readonly clusterName: string;
  readonly routePort: number;
  readonly routePorts: readonly number[];
  /** The credentials routes present to each other: a route is a server, not a client, so it gets no account. */
  readonly routeUser: string;
  readonly routePassword: string;
}

/**
 * The `cluster {}` block: routes listen on loopback (or `host`) and authenticate with their own
 * user/password (no client identity can open a route, and routes never carry account rights).
 */
function clusterBlock(host: string, c: ClusterNodeConfig): Record<string, unknown> {
  const auth = `${encodeURIComponent(c.routeUser)}:${encodeURIComponent(c.routePassword)}`;
  return {
    name: c.clusterName,
    listen: `${host}:${c.routePort}`,
    authorization: { user: c.routeUser, password: c.routePassword, timeout: AUTH_TIMEOUT_S },
    routes: c.routePorts.map((p) => `nats://${auth}@${host}:${p}`),
  };
}
