import { jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { TenantId } from "../../contracts/index.ts";
import { standingFromLog, startRuntimeCallout } from "../../platform/nats-auth/callout.ts";
import { credentialOf, type NatsKeys } from "../../platform/nats-auth/credentials.ts";
import type { Identity } from "../../platform/nats-auth/rights.ts";
import { runtimePasswordFor } from "../../platform/nats-auth/runtime-rights.ts";
import { serverKeysOf } from "../../platform/nats-auth/server-keys.ts";
import { connectNats } from "../../platform/nats-connect.ts";
import { setupNats } from "../../platform/nats-setup.ts";
import { snapshotStreamOf } from "../../platform/snapshots/store.ts";
import { createEventStore, runtimeRef, type EventStore, type HistoryResponderOptions } from "../../streams/index.ts";
import { historyResponderSwitch, type HistorySwitch } from "./history-responder-switch.ts";
import { event, freshStreams, type StreamsFixture } from "./streams.ts";

export const AUTH_TEST_SECRET = "nats-auth-test-secret-0123456789abcdef";

/** Resolves "refused" when the server refuses the request (permission violation), else what came back. */
export async function attempt(nc: NatsConnection, subject: string, body = "{}"): Promise<string> {
  try {
    const m = await nc.request(subject, body, { timeout: 1500 });
    const status = m.headers ? ` status ${m.headers.code} ${m.headers.description}` : "";
    return `answered:${status} ${m.string().slice(0, 160)}`;
  } catch (e) {
    return /permission/i.test(String(e)) ? "refused" : `failed: ${String(e)}`;
  }
}

/**
 * Fresh streams on the shared test server, set up by the setup identity, with the provisioner's
 * history responder and auth callout answering runtimes (minted users live `ttlMs`): connect as any identity or runtime.
 */
export interface AuthFixture {
  readonly keys: NatsKeys;
  readonly f: StreamsFixture;
  /** A harness (every right) event store. */
  readonly store: EventStore;
  readonly provisioner: NatsConnection;
  /** The provisioner's history responder: stopped and started again as a provisioner's SIGKILL and restart do. */
  readonly history: HistorySwitch;
  as(id: Identity): Promise<NatsConnection>;
  runtimeCreds(id: string): string;
  asRuntime(id: string): Promise<NatsConnection>;
  register(id: string, tenantId: string): Promise<unknown>;
  close(): Promise<void>;
}

export async function authFixture(
  url: string,
  ttlMs = 2_000,
  history: HistoryResponderOptions = {},
): Promise<AuthFixture> {
  const keys = serverKeysOf(url)!;
  const f = await freshStreams(url, "auth");
  await setupNats(f.jsm, f.layout);
  const store = createEventStore(f.nc, f.layout);
  const open: NatsConnection[] = [];
  const as = async (id: Identity) => {
    const nc = await connectNats({ servers: url, creds: credentialOf(keys, id) });
    open.push(nc);
    return nc;
  };
  const runtimeCreds = (id: string) => `${id}:${runtimePasswordFor(AUTH_TEST_SECRET, f.layout.eventPrefix, id)}`;
  const provisioner = await as("provisioner");
  // As the provisioner does: runtimes read their histories from it (streams/history-responder.ts).
  const provisionerJsm = await jetstreamManager(provisioner);
  const responder = historyResponderSwitch(provisioner, provisionerJsm, f.layout, history);
  startRuntimeCallout({
    nc: provisioner,
    layout: f.layout,
    secret: AUTH_TEST_SECRET,
    issuerSeed: keys.calloutSeed,
    ttlMs,
    standing: standingFromLog(await jetstreamManager(provisioner), f.layout),
    now: Date.now,
  });
  return {
    keys,
    f,
    store,
    provisioner,
    history: responder,
    as,
    runtimeCreds,
    async asRuntime(id) {
      const nc = await connectNats({
        servers: url,
        creds: runtimeCreds(id),
        maxReconnectAttempts: 2,
        reconnectTimeWait: 100,
      });
      open.push(nc);
      return nc;
    },
    register(id, tenantId) {
      const reg = event("runtime.registered");
      const data = { ...reg.data, tenantId: TenantId.parse(tenantId) };
      return store.append(runtimeRef(id), { ...reg, data }, { expectedSeq: 0 });
    },
    async close() {
      for (const nc of open) await nc.close().catch(() => undefined);
      await f.jsm.streams.delete(snapshotStreamOf(f.layout)).catch(() => undefined);
      await f.close();
    },
  };
}
