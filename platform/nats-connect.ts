import { connect, nkeyAuthenticator, usernamePasswordAuthenticator } from "@nats-io/transport-node";
import type { ConnectionOptions, NatsConnection } from "@nats-io/transport-node";
import { parseCredential } from "./nats-auth/credentials.ts";

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
  if (creds === undefined || creds === "") return { servers, ...extra };
  const c = parseCredential(creds);
  const te = new TextEncoder();
  const authenticator = c.secret.startsWith("SU")
    ? nkeyAuthenticator(te.encode(c.secret))
    : usernamePasswordAuthenticator(c.name, c.secret);
  return { servers, authenticator, inboxPrefix: `_INBOX_${c.name}`, ...extra };
}

/** Connects as the identity in NATS_CREDS to NATS_URL (or the given values). */
export function connectNats(
  o: { servers?: string; creds?: string } & Partial<ConnectionOptions> = {},
): Promise<NatsConnection> {
  const { servers, creds, ...extra } = o;
  const url = servers ?? process.env.NATS_URL;
  if (!url) throw new Error("NATS_URL is required");
  return connect(natsConnectOptions(url, creds ?? process.env.NATS_CREDS, extra));
}
