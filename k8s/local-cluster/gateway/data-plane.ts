import {
  createServer as createHttpServer,
  request as httpRequest,
  type IncomingMessage,
  type ServerResponse,
} from "node:http";
import {
  connect as h2connect,
  constants as h2,
  createServer as createH2Server,
  type ClientHttp2Session,
  type IncomingHttpHeaders,
  type ServerHttp2Stream,
} from "node:http2";
import { createServer as createNetServer, type Server, type Socket } from "node:net";
import type { Endpoint } from "./endpoints.ts";
import type { RequestFacts } from "./route-match.ts";

/** Where a request goes: a ready endpoint, or an HTTP error status (404 no route, 500 bad backend, 503 no endpoint). */
export type Decision = { readonly to: Endpoint } | { readonly status: number; readonly message: string };
export type Decide = (facts: RequestFacts) => Decision;

const HOP_BY_HOP = new Set([
  "connection",
  "keep-alive",
  "proxy-connection",
  "transfer-encoding",
  "upgrade",
  "http2-settings",
  "host",
]);
const PREFACE = Buffer.from("PRI * HTTP/2.0");

/**
 * One listening address:port of the local gateway. It serves HTTP/1.1 and h2c (HTTP/2 with prior
 * knowledge, which is what gRPC clients speak in plaintext) on the same port by peeking at the
 * first bytes of each connection, asks `decide` where each request goes, and proxies it: h2c
 * upstream (trailers included, so gRPC status survives) for gRPC requests and for HTTP/2 requests to
 * a Service port with appProtocol `kubernetes.io/h2c`; HTTP/1.1 upstream otherwise.
 */
export class ListenerServer {
  private readonly sessions = new Map<string, ClientHttp2Session>();
  private readonly sockets = new Set<Socket>();
  private constructor(private readonly server: Server) {}

  /** Binds ip:port; rejects with the listen error (EADDRINUSE, EACCES…). */
  static async bind(ip: string, port: number, decide: Decide): Promise<ListenerServer> {
    const h1 = createHttpServer((req, res) => proxyHttp1(req, res, decide));
    const h2s = createH2Server();
    const net = createNetServer((socket) => {
      self.sockets.add(socket);
      socket.once("close", () => self.sockets.delete(socket));
      let seen = Buffer.alloc(0);
      const onData = (chunk: Buffer): void => {
        seen = Buffer.concat([seen, chunk]);
        if (seen.length < PREFACE.length && PREFACE.subarray(0, seen.length).equals(seen)) return; // need more bytes to tell
        socket.off("data", onData);
        socket.pause();
        // Hand the bytes back: http2 drains the socket's buffer itself (and breaks if the socket is
        // also resumed), the HTTP/1.1 server only reads it once the socket flows again.
        socket.unshift(seen);
        if (seen.subarray(0, PREFACE.length).equals(PREFACE)) h2s.emit("connection", socket);
        else {
          h1.emit("connection", socket);
          socket.resume();
        }
      };
      socket.on("data", onData);
    });
    const self = new ListenerServer(net);
    h2s.on("stream", (stream, headers) => self.proxyHttp2(stream, headers, decide));
    await new Promise<void>((ok, fail) => {
      net.once("error", fail);
      net.listen(port, ip, () => {
        net.off("error", fail);
        ok();
      });
    });
    return self;
  }

  /** Stops listening, drops open connections and upstream sessions. */
  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    for (const s of this.sessions.values()) s.destroy();
    await new Promise<void>((ok) => this.server.close(() => ok()));
  }

  private upstream(ep: Endpoint): ClientHttp2Session {
    const key = `${ep.ip}:${ep.port}`;
    const existing = this.sessions.get(key);
    if (existing && !existing.closed && !existing.destroyed) return existing;
    const s = h2connect(`http://${key}`);
    const drop = (): void => {
      if (this.sessions.get(key) === s) this.sessions.delete(key);
    };
    s.on("error", drop);
    s.on("close", drop);
    s.on("goaway", drop);
    this.sessions.set(key, s);
    return s;
  }

  private proxyHttp2(stream: ServerHttp2Stream, headers: IncomingHttpHeaders, decide: Decide): void {
    const path = String(headers[":path"] ?? "/");
    const d = decide({
      method: String(headers[":method"] ?? "GET"),
      path,
      host: String(headers[":authority"] ?? ""),
      headers,
      grpc: String(headers["content-type"] ?? "").startsWith("application/grpc"),
    });
    if (!("to" in d)) {
      stream.respond({ ":status": d.status, "content-type": "text/plain" });
      stream.end(`${d.message}\n`);
      return;
    }
    const grpc = String(headers["content-type"] ?? "").startsWith("application/grpc");
    if (!grpc && !d.to.h2c) {
      proxyHttp2ToHttp1(stream, headers, d.to);
      return;
    }
    const out: Record<string, string | string[]> = {};
    for (const [k, v] of Object.entries(headers)) if (v !== undefined && !HOP_BY_HOP.has(k)) out[k] = v;
    const up = this.upstream(d.to).request(out);
    let trailers: Record<string, string | string[]> = {};
    up.on("response", (h, flags) => {
      const resp: Record<string, string | string[] | number> = {};
      for (const [k, v] of Object.entries(h)) if (v !== undefined && !HOP_BY_HOP.has(k)) resp[k] = v;
      if (stream.destroyed) return;
      // A trailers-only answer (e.g. a gRPC error) ends with its headers: pass it on as such.
      if ((Number(flags) & h2.NGHTTP2_FLAG_END_STREAM) !== 0) {
        stream.respond(resp, { endStream: true });
        return;
      }
      stream.respond(resp, { waitForTrailers: true });
      up.pipe(stream);
    });
    up.on("trailers", (t) => {
      trailers = {};
      for (const [k, v] of Object.entries(t)) if (v !== undefined) trailers[k] = v as string | string[];
    });
    stream.on("wantTrailers", () => stream.sendTrailers(trailers));
    up.on("error", (err) => {
      if (stream.destroyed) return;
      if (!stream.headersSent) {
        stream.respond({ ":status": 502, "content-type": "text/plain" });
        stream.end(`upstream ${d.to.pod}: ${err.message}\n`);
      } else stream.close(h2.NGHTTP2_INTERNAL_ERROR);
    });
    stream.on("close", () => {
      if (!up.closed) up.close(h2.NGHTTP2_CANCEL);
    });
    stream.pipe(up);
  }
}

function proxyHttp1(req: IncomingMessage, res: ServerResponse, decide: Decide): void {
  const d = decide({
    method: req.method ?? "GET",
    path: req.url ?? "/",
    host: req.headers.host ?? "",
    headers: req.headers,
    grpc: false,
  });
  if (!("to" in d)) {
    res.writeHead(d.status, { "content-type": "text/plain" }).end(`${d.message}\n`);
    return;
  }
  const headers: Record<string, string | string[]> = {};
  for (const [k, v] of Object.entries(req.headers)) if (v !== undefined && !HOP_BY_HOP.has(k)) headers[k] = v;
  headers.host = req.headers.host ?? `${d.to.ip}:${d.to.port}`;
  const up = httpRequest({ host: d.to.ip, port: d.to.port, method: req.method, path: req.url, headers }, (ur) => {
    const h: Record<string, string | string[]> = {};
    for (const [k, v] of Object.entries(ur.headers)) if (v !== undefined && !HOP_BY_HOP.has(k)) h[k] = v;
    res.writeHead(ur.statusCode ?? 502, h);
    ur.pipe(res);
  });
  up.on("error", (err) => {
    if (!res.headersSent)
      res.writeHead(502, { "content-type": "text/plain" }).end(`upstream ${d.to.pod}: ${err.message}\n`);
    else res.destroy(err);
  });
  req.pipe(up);
}

// An HTTP/2 request for an HTTP/1.1 backend: same method, path, headers and body; the answer's
// status, headers and body go back on the stream.
function proxyHttp2ToHttp1(stream: ServerHttp2Stream, headers: IncomingHttpHeaders, to: Endpoint): void {
  const out: Record<string, string | string[]> = {};
  for (const [k, v] of Object.entries(headers))
    if (v !== undefined && !k.startsWith(":") && !HOP_BY_HOP.has(k)) out[k] = v;
  out.host = String(headers[":authority"] ?? `${to.ip}:${to.port}`);
  const up = httpRequest(
    {
      host: to.ip,
      port: to.port,
      method: String(headers[":method"] ?? "GET"),
      path: String(headers[":path"] ?? "/"),
      headers: out,
    },
    (ur) => {
      const h: Record<string, string | string[] | number> = { ":status": ur.statusCode ?? 502 };
      for (const [k, v] of Object.entries(ur.headers)) if (v !== undefined && !HOP_BY_HOP.has(k)) h[k] = v;
      if (stream.destroyed) return;
      stream.respond(h);
      ur.pipe(stream);
    },
  );
  up.on("error", (err) => {
    if (stream.destroyed) return;
    if (!stream.headersSent) {
      stream.respond({ ":status": 502, "content-type": "text/plain" });
      stream.end(`upstream ${to.pod}: ${err.message}\n`);
    } else stream.close(h2.NGHTTP2_INTERNAL_ERROR);
  });
  stream.pipe(up);
}
