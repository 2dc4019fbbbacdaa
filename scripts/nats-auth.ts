/**
 * NATS authentication for `make run` (scripts/infra-up.sh, scripts/run.sh) and deployments:
 *   nats-auth.ts config <dir> <host> <port> <storeDir>  keys (kept in <dir>/keys.json, made once) + <dir>/nats.conf
 *                                                        (NATS_TLS=1: TLS only, CA + certificate made once in <dir>/tls)
 *   nats-auth.ts cluster-config <dir> <host> <storeRoot> <clientPorts> <routePorts>
 *                                                        a node per comma-separated port pair: <dir>/nats-<i>.conf
 *                                                        (server_name n<i>, store <storeRoot>/n<i>, route user made once)
 *   nats-auth.ts k8s-server-secret <dir> [replicas]       prints the Secret drover-nats-server (auth.conf) the NATS
 *                                                        StatefulSet includes (k8s/drover/15-nats.yaml): accounts,
 *                                                        identities, auth callout, and the cluster block with its routes
 *   nats-auth.ts creds <dir> <identity>                  prints that identity's NATS_CREDS
 *   nats-auth.ts callout-seed <dir>                      prints DROVER_NATS_CALLOUT_SEED (the provisioner's)
 *   nats-auth.ts setup <dir> [credsDir]                  streams, durable consumer, outputs stream (as `setup`);
 *                                                        with credsDir, every service's creds written there too
 *   nats-auth.ts k8s-secret <dir>                        prints the Secrets drover-nats (services, k8s/drover/30-services.yaml)
 *                                                        and drover-nats-setup (the setup Job, 25-setup-job.yaml)
 * The configuration's rights are those of docs/nats-identities.md for the default layout, or for
 * every tagged layout when DROVER_STREAM_TAG is set.
 */
import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { jetstreamManager } from "@nats-io/jetstream";
import { credentialOf, generateKeys, type NatsKeys } from "../platform/nats-auth/credentials.ts";
import { scopeOf, TAGGED_SCOPE, type Identity } from "../platform/nats-auth/rights.ts";
import { authConfig, serverConfig } from "../platform/nats-auth/server-config.ts";
import { generateTls } from "../platform/nats-auth/tls.ts";
import { connectNats } from "../platform/nats-connect.ts";
import { setupNats } from "../platform/nats-setup.ts";
import { eventCompactionFromEnv, streamLimitsFromEnv } from "../streams/limits.ts";
import { DEFAULT_LAYOUT, taggedLayout } from "../streams/index.ts";

const [cmd, dir, ...rest] = process.argv.slice(2);
if (!cmd || !dir) {
  process.stderr.write("usage: nats-auth.ts config|creds|callout-seed|setup <dir> ...\n");
  process.exit(2);
}
const keysFile = join(dir, "keys.json");
const keys = (): NatsKeys => JSON.parse(readFileSync(keysFile, "utf8")) as NatsKeys;
const tag = process.env.DROVER_STREAM_TAG;
const layout = tag ? taggedLayout(tag) : DEFAULT_LAYOUT;

if (cmd === "config") {
  const [host, port, storeDir] = rest;
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  // DROVER_NATS_PRODUCERS=acme,globex adds a tenant-limited producer identity per tenant (docs/producers.md).
  const producers = (process.env.DROVER_NATS_PRODUCERS ?? "").split(",").filter((t) => t !== "");
  if (!existsSync(keysFile)) writeFileSync(keysFile, JSON.stringify(generateKeys({ producers })), { mode: 0o600 });
  const scopes = tag ? [TAGGED_SCOPE] : [scopeOf(DEFAULT_LAYOUT)];
  // NATS_TLS=1: TLS only, with a CA and server certificate generated once under <dir>/tls (clients: NATS_CA_FILE).
  const tls = process.env.NATS_TLS === "1" ? await generateTls(join(dir, "tls"), [host!, "localhost"]) : undefined;
  const conf = serverConfig({
    host: host!,
    port: Number(port),
    storeDir: storeDir!,
    keys: keys(),
    scopes,
    ...(tls ? { tls } : {}),
  });
  writeFileSync(join(dir, "nats.conf"), conf, { mode: 0o600 });
} else if (cmd === "cluster-config") {
  // NATS_CLUSTER=3 (scripts/infra-up.sh): the same accounts and identities on every node, routes
  // authenticated by their own user (kept in <dir>/route.json so a restart keeps the cluster).
  const [host, storeRoot, clientPorts, routePorts] = rest;
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const producers = (process.env.DROVER_NATS_PRODUCERS ?? "").split(",").filter((t) => t !== "");
  if (!existsSync(keysFile)) writeFileSync(keysFile, JSON.stringify(generateKeys({ producers })), { mode: 0o600 });
  const routeFile = join(dir, "route.json");
  if (!existsSync(routeFile))
    writeFileSync(routeFile, JSON.stringify({ password: randomBytes(18).toString("base64url") }), { mode: 0o600 });
  const { password } = JSON.parse(readFileSync(routeFile, "utf8")) as { password: string };
  const clients = clientPorts!.split(",").map(Number);
  const routes = routePorts!.split(",").map(Number);
  clients.forEach((port, i) => {
    const storeDir = join(storeRoot!, `n${i + 1}`);
    mkdirSync(storeDir, { recursive: true });
    const cluster = {
      serverName: `n${i + 1}`,
      clusterName: "drover",
      routePort: routes[i]!,
      routePorts: routes,
      routeUser: "route",
      routePassword: password,
    };
    const conf = serverConfig({
      host: host!,
      port,
      storeDir,
      keys: keys(),
      scopes: tag ? [TAGGED_SCOPE] : [scopeOf(DEFAULT_LAYOUT)],
      cluster,
    });
    writeFileSync(join(dir, `nats-${i + 1}.conf`), conf, { mode: 0o600 });
  });
} else if (cmd === "k8s-server-secret") {
  // The StatefulSet's Pods are nats-<i>.nats.drover-deps.svc; each route authenticates as `route`.
  const size = Number(rest[0] ?? 3);
  const routeFile = join(dir, "route.json");
  if (!existsSync(routeFile))
    writeFileSync(routeFile, JSON.stringify({ password: randomBytes(18).toString("base64url") }), { mode: 0o600 });
  const { password } = JSON.parse(readFileSync(routeFile, "utf8")) as { password: string };
  const routes = Array.from({ length: size }, (_, i) => `nats://route:${password}@nats-${i}.nats.drover-deps.svc:6222`);
  const conf = {
    ...authConfig(keys(), tag ? [TAGGED_SCOPE] : [scopeOf(DEFAULT_LAYOUT)]),
    cluster: {
      name: "drover",
      listen: "0.0.0.0:6222",
      authorization: { user: "route", password, timeout: 10 },
      routes,
    },
  };
  const secret = {
    apiVersion: "v1",
    kind: "Secret",
    metadata: { name: "drover-nats-server", namespace: "drover-deps" },
    type: "Opaque",
    stringData: { "auth.conf": JSON.stringify(conf, null, 2) },
  };
  process.stdout.write(JSON.stringify(secret, null, 2) + "\n");
} else if (cmd === "creds") {
  process.stdout.write(credentialOf(keys(), rest[0] as Identity));
} else if (cmd === "callout-seed") {
  process.stdout.write(keys().calloutSeed);
} else if (cmd === "setup") {
  const nc = await connectNats({ creds: credentialOf(keys(), "setup") });
  const limits = streamLimitsFromEnv(process.env);
  // A cluster that has just started answers 503/10008 until its meta group has a leader, and
  // refuses R3 streams until every peer has joined: retry for up to a minute.
  for (let attempt = 1; ; attempt++) {
    try {
      await setupNats(await jetstreamManager(nc), layout, undefined, limits, eventCompactionFromEnv(process.env));
      break;
    } catch (e) {
      if (attempt >= 60) throw e;
      await new Promise((r) => setTimeout(r, 1_000));
    }
  }
  await nc.close();
  // `setup <dir> <credsDir>` (scripts/run.sh): also each service's NATS_CREDS as <credsDir>/<id>.creds
  // (mode 0600, beside keys.json that holds every seed), the provisioner's callout seed and recovery's
  // kicker (absent for keys made before the kicker existed): one process instead of one per service.
  const credsDir = rest[0];
  if (credsDir) {
    mkdirSync(credsDir, { recursive: true, mode: 0o700 });
    const k = keys();
    const put = (name: string, text: string) => writeFileSync(join(credsDir, name), text, { mode: 0o600 });
    for (const id of ["api", "admission", "capacity", "provisioner", "recovery", "forensics", "scheduler"] as const)
      put(`${id}.creds`, credentialOf(k, id));
    put("callout-seed", k.calloutSeed);
    if (k.seeds.kicker) put("kicker.creds", credentialOf(k, "kicker"));
  }
} else if (cmd === "k8s-secret") {
  // Two Secrets: the services' identities (and the callout key) in drover-nats; the setup identity,
  // which may create streams and durables, in drover-nats-setup, read only by the setup Job
  // (k8s/drover/25-setup-job.yaml). Services never hold setup rights.
  const k = keys();
  const secret = (name: string, data: Record<string, string>) => ({
    apiVersion: "v1",
    kind: "Secret",
    metadata: { name, namespace: "drover-system" },
    type: "Opaque",
    stringData: data,
  });
  const services = Object.fromEntries([
    ...(["api", "admission", "capacity", "provisioner", "recovery", "forensics", "scheduler", "operator"] as const).map(
      (id) => [id, credentialOf(k, id)],
    ),
    ["callout-seed", k.calloutSeed],
    // Recovery's second identity (system account: CONNZ and KICK only), DROVER_NATS_KICK_CREDS.
    ["kicker", credentialOf(k, "kicker")],
  ]);
  const list = {
    apiVersion: "v1",
    kind: "List",
    items: [
      secret("drover-nats", services),
      secret("drover-nats-setup", { setup: credentialOf(k, "setup") }),
      // The only identity that may purge the event stream (docs/retention.md): held by the compaction job alone.
      secret("drover-nats-compactor", { compactor: credentialOf(k, "compactor") }),
    ],
  };
  process.stdout.write(JSON.stringify(list, null, 2) + "\n");
} else {
  process.stderr.write(`unknown command ${cmd}\n`);
  process.exit(2);
}
