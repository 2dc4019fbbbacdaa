import { connect } from "node:net";

/**
 * What one TCP connect to a runtime's command endpoint found: `refused` (the host answered that
 * nothing listens on that port: a reset), `accepted`, or `inconclusive` (a timeout, an unreachable
 * network, an endpoint this reader cannot parse). Only `refused` says something about the runtime.
 */
export type ProbeResult = "refused" | "accepted" | "inconclusive";

/** host and port of an endpoint as `endpoint-published` writes it: `http://host:port` or `host:port`. */
export function endpointAddress(endpoint: string): { host: string; port: number } | undefined {
  const url = /^[a-z][a-z0-9+.-]*:\/\//i.test(endpoint) ? endpoint : `tcp://${endpoint}`;
  try {
    const u = new URL(url);
    if (u.protocol !== "http:" && u.protocol !== "tcp:") return undefined;
    const port = Number(u.port || (u.protocol === "http:" ? 80 : NaN));
    if (!u.hostname || !Number.isInteger(port) || port <= 0) return undefined;
    return { host: u.hostname.replace(/^\[|\]$/g, ""), port };
  } catch {
    return undefined;
  }
}

/** Opens and closes one TCP connection to `endpoint` (nothing is sent), within `timeoutMs`. */
export function probeEndpoint(endpoint: string, timeoutMs: number): Promise<ProbeResult> {
  const at = endpointAddress(endpoint);
  if (!at) return Promise.resolve("inconclusive");
  return new Promise((done) => {
    const s = connect({ host: at.host, port: at.port });
    const end = (r: ProbeResult) => {
      clearTimeout(timer);
      s.destroy();
      done(r);
    };
    const timer = setTimeout(() => end("inconclusive"), timeoutMs);
    s.once("connect", () => end("accepted"));
    s.once("error", (e: NodeJS.ErrnoException) => end(e.code === "ECONNREFUSED" ? "refused" : "inconclusive"));
  });
}
