import { connect, nkeyAuthenticator, usernamePasswordAuthenticator } from "@nats-io/transport-node";
import type { ConnectionOptions, NatsConnection } from "@nats-io/transport-node";
import { parseCredential } from "./nats-auth/credentials.ts";

/**
 * The seeds of a NATS_URL: one URL, or a comma-separated list of a cluster's nodes (nats.js takes
 * a list, not a comma-joined string). The client connects to one, learns the others from it and
 * fails over to any seed when its node goes away.
 */
export const seedsOf = (servers: string): string[] =>
  servers
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s !== "");

/**
 * The one place that turns "where and who" into NATS connection options: every service, runtime,
 * CLI command and test connects through it. `creds` is a NATS_CREDS value (`<name>:<secret>`,
 * nats-auth/credentials.ts): an nkey seed signs the server's nonce; any other secret is a runtime's
 * password for the auth callout. Replies come back on `_INBOX_<name>`, the only inbox the
 * identity may read.
 */
export function natsConnectOptions(
  servers: string,
  creds: string | undefined,
  extra: Partial<ConnectionOptions> = {},
): ConnectionOptions {
  const seeds = seedsOf(servers);
  if (creds === undefined || creds === "") return { servers: seeds, ...extra };
  const c = parseCredential(creds);
  const te = new TextEncoder();
  const authenticator = c.secret.startsWith("SU")
    ? nkeyAuthenticator(te.encode(c.secret))
    : usernamePasswordAuthenticator(c.name, c.secret);
  return { servers: seeds, authenticator, inboxPrefix: `_INBOX_${c.name}`, ...extra };
}

/**
 * Connects as the identity in NATS_CREDS to NATS_URL (or the given values), over TLS verified
 * against the CA in `caFile` or NATS_CA_FILE when either is set (a server configured with `tls {}`
 * refuses plaintext clients; docs/nats-identities.md "TLS").
 */
export function connectNats(
  o: { servers?: string; creds?: string; caFile?: string } & Partial<ConnectionOptions> = {},
): Promise<NatsConnection> {
  const { servers, creds, caFile, ...extra } = o;
  const url = servers ?? process.env.NATS_URL;
  if (!url) throw new Error("NATS_URL is required");
  const ca = caFile ?? process.env.NATS_CA_FILE;
  return connect(
    natsConnectOptions(url, creds ?? process.env.NATS_CREDS, { ...(ca ? { tls: { caFile: ca } } : {}), ...extra }),
  );
}
