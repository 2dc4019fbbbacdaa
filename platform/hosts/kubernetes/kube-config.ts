import { Agent } from "node:https";
import { KubeConfig, type RequestContext } from "@kubernetes/client-node";

/** Longer idle than this and a pooled connection is closed (kube-apiserver closes idle ones at 90 s). */
const IDLE_SOCKET_MS = 30_000;

type FetchInit = Awaited<ReturnType<KubeConfig["applyToFetchOptions"]>>;

/**
 * A KubeConfig whose API calls and watches reuse their TLS connections to the API server.
 * @kubernetes/client-node 1.x builds a new `https.Agent` for every request (`createAgent`, called by
 * `applySecurityAuthentication` and `applyToFetchOptions`), so every list, delete and watch opened a
 * TCP connection and did a full TLS handshake, on both sides, before its request could be sent: on a
 * loaded machine, each of the fence's few requests waited its turn for CPU several times over. This
 * keeps one keep-alive agent with the same TLS options (CA, client certificate and key, server name,
 * verification) and hands it to every request; the agent is rebuilt when those options change
 * (a rotated client certificate read from its file). Idle pooled sockets are unreferenced (they
 * never keep a process alive) and closed after {@link IDLE_SOCKET_MS}. Proxies (their own agent kinds) and plain
 * `http.Agent`s are left as the library builds them. The WebSocket paths (port-forward, exec) use
 * `applyToHTTPSOptions` and are not changed either.
 */
export class PooledKubeConfig extends KubeConfig {
  private pooled: { key: string; agent: Agent } | undefined;

  override async applySecurityAuthentication(context: RequestContext): Promise<void> {
    await super.applySecurityAuthentication(context);
    const fresh = context.getAgent();
    if (fresh) context.setAgent(this.pool(fresh));
  }

  override async applyToFetchOptions(opts: Parameters<KubeConfig["applyToFetchOptions"]>[0]): Promise<FetchInit> {
    const init = await super.applyToFetchOptions(opts);
    return init.agent instanceof Agent ? { ...init, agent: this.pool(init.agent) } : init;
  }

  private pool<A>(fresh: A): A | Agent {
    // Exactly a plain https.Agent: proxy agents subclass it and must keep their own behaviour.
    if (!(fresh instanceof Agent) || Object.getPrototypeOf(fresh) !== Agent.prototype) return fresh;
    const o = fresh.options;
    const key = JSON.stringify(
      [o.ca, o.cert, o.key, o.pfx, o.passphrase, o.servername, o.rejectUnauthorized].map(text),
    );
    if (this.pooled?.key !== key) {
      this.pooled?.agent.destroy();
      this.pooled = { key, agent: new Agent({ ...o, keepAlive: true, timeout: IDLE_SOCKET_MS }) };
    }
    fresh.destroy();
    return this.pooled.agent;
  }
}

const text = (v: unknown): unknown => (Buffer.isBuffer(v) ? v.toString("base64") : Array.isArray(v) ? v.map(text) : v);
