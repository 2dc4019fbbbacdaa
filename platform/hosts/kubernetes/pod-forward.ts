import { createServer, type AddressInfo, type Socket } from "node:net";
import { PassThrough, Writable } from "node:stream";
import { PortForward, type KubeConfig } from "@kubernetes/client-node";

/** What a forward has done so far (for logs, `revalidate` and tests). */
export interface ForwardStats {
  /** Tunnels opened to the Pod (one per accepted connection). */
  readonly tunnels: number;
  /** Connections reset because their tunnel could not be opened or reported an error. */
  readonly failures: number;
  /** The last failure's text, if any. */
  readonly lastFailure?: string;
}

/** A local listener forwarding each connection to one Pod's port through the API server. */
export interface PodForward {
  /** `host:port` of the local listener (brackets around an IPv6 host). */
  readonly address: string;
  stats(): ForwardStats;
  /** Ends every tunnel of this forward now; the listener stays (the next connection opens a new tunnel). */
  dropTunnels(): void;
  /** Stops the listener and ends every tunnel; idempotent. */
  close(): Promise<void>;
  /** True once `close()` was called (by the kill, the strategy, or the Pod-gone check). */
  closed(): boolean;
}

type Tunnel = { close(): void; on(ev: "close" | "error", f: (e?: unknown) => void): void };

/**
 * Opens a local listener on `bindAddress` (port chosen by the OS) that forwards every accepted TCP
 * connection to `podPort` of Pod `namespace/podName`, each through its own WebSocket to the API
 * server's `pods/portforward` subresource (@kubernetes/client-node's PortForward; the API server
 * tunnels it to the kubelet's streaming server, which dials the port inside the Pod's network
 * namespace). A tunnel per connection is what makes the forward re-establish itself: a tunnel that
 * drops (API server restart, idle timeout, the Pod's connection closed) ends only its connection,
 * and the client's next connection opens a fresh tunnel to the same Pod name. A tunnel that cannot
 * be opened (the Pod is gone, no `pods/portforward` right) or reports an error on its error stream
 * resets its connection at once: the caller sees a transport error, as it would dialling a dead Pod
 * IP, never a hang; `onTunnelFailure` hears of it. The listener lives until `close()`.
 */
export async function openPodForward(
  kc: KubeConfig,
  namespace: string,
  podName: string,
  podPort: number,
  bindAddress = "127.0.0.1",
  onTunnelFailure?: (why: string) => void,
): Promise<PodForward> {
  const pf = new PortForward(kc);
  const sockets = new Set<Socket>();
  const tunnels = new Set<Tunnel>();
  let opened = 0;
  let failures = 0;
  let lastFailure: string | undefined;
  let closed = false;
  const fail = (sock: Socket, why: string): void => {
    failures++;
    lastFailure = why.slice(0, 500);
    sock.destroy();
    onTunnelFailure?.(lastFailure);
  };
  /** A tunnel being opened (or open) with its own streams, attached to a connection later. */
  interface Pending {
    readonly ws: Promise<Tunnel>;
    readonly out: PassThrough;
    readonly inp: PassThrough;
    sock?: Socket;
    ended?: string;
  }
  const openTunnel = (): Pending => {
    const out = new PassThrough();
    const inp = new PassThrough();
    const p: { -readonly [K in keyof Pending]: Pending[K] } = { out, inp, ws: Promise.resolve(undefined as never) };
    // The error stream carries the kubelet's text when dialling the port inside the Pod failed.
    const errors = new Writable({
      write(chunk: Buffer, _enc, cb) {
        if (chunk.length > 0) {
          p.ended = `pods/portforward ${namespace}/${podName}:${podPort}: ${chunk.toString()}`;
          if (p.sock) fail(p.sock, p.ended);
        }
        cb();
      },
    });
    p.ws = pf.portForward(namespace, podName, [podPort], out, errors, inp).then((ws) => {
      const t = ws as unknown as Tunnel;
      opened++;
      tunnels.add(t);
      t.on("error", () => undefined);
      t.on("close", () => {
        tunnels.delete(t);
        p.ended ??= "tunnel closed";
        p.sock?.end();
      });
      if (closed) t.close();
      return t;
    });
    p.ws.catch(() => undefined);
    return p;
  };
  // One tunnel is kept open ahead of demand: a connection takes it at once instead of waiting for a
  // WebSocket, the API server and the kubelet's dial (seconds on a loaded machine).
  let spare: Pending | undefined;
  const server = createServer({ pauseOnConnect: true }, (sock) => {
    sockets.add(sock);
    sock.on("error", () => undefined);
    sock.on("close", () => sockets.delete(sock));
    const p = spare && !spare.ended ? spare : openTunnel();
    spare = closed ? undefined : openTunnel();
    p.sock = sock;
    p.ws.then(
      (t) => {
        if (closed || sock.destroyed) {
          t.close();
          return;
        }
        if (p.ended) {
          fail(sock, p.ended);
          return;
        }
        p.out.pipe(sock);
        sock.pipe(p.inp);
        sock.on("close", () => t.close());
        sock.resume();
      },
      (e: unknown) => fail(sock, `open pods/portforward ${namespace}/${podName}:${podPort}: ${describe(e)}`),
    );
  });
  await new Promise<void>((ok, ko) => {
    server.once("error", ko);
    server.listen(0, bindAddress, () => {
      server.off("error", ko);
      ok();
    });
  });
  const { port } = server.address() as AddressInfo;
  const dropTunnels = (): void => {
    for (const t of tunnels) t.close();
  };
  return {
    address: bindAddress.includes(":") ? `[${bindAddress}]:${port}` : `${bindAddress}:${port}`,
    stats: () => ({ tunnels: opened, failures, ...(lastFailure ? { lastFailure } : {}) }),
    dropTunnels,
    closed: () => closed,
    close: () => {
      closed = true;
      spare = undefined;
      dropTunnels();
      for (const s of sockets) s.destroy();
      return new Promise<void>((ok) => server.close(() => ok()));
    },
  };
}

/** A WebSocket error event (an object with `message`) or an Error, as text. */
function describe(e: unknown): string {
  if (e instanceof Error) return e.message;
  if (e && typeof e === "object" && "message" in e) return String((e as { message: unknown }).message);
  return String(e);
}
