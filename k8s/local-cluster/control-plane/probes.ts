import { request as httpRequest } from "node:http";
import { request as httpsRequest } from "node:https";

/**
 * GETs `url` and resolves true on a 200 answer, false on any other status or a connection error
 * (used to poll etcd's /health and kube-apiserver's /readyz during start-up; `insecure` for the
 * scheduler's and controller manager's self-signed healthz).
 */
export function getOk(
  url: string,
  opts: { ca?: Buffer; token?: string; timeoutMs?: number; insecure?: boolean } = {},
): Promise<boolean> {
  return new Promise((ok) => {
    const u = new URL(url);
    const headers: Record<string, string> = opts.token ? { authorization: `Bearer ${opts.token}` } : {};
    const req = (u.protocol === "https:" ? httpsRequest : httpRequest)(
      u,
      { headers, ca: opts.ca, timeout: opts.timeoutMs ?? 2000, rejectUnauthorized: opts.insecure !== true },
      (res) => {
        res.resume();
        res.once("end", () => ok(res.statusCode === 200));
      },
    );
    req.once("error", () => ok(false));
    req.once("timeout", () => {
      req.destroy();
      ok(false);
    });
    req.end();
  });
}
