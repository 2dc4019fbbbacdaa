import { lookup as dnsLookup, type LookupAddress } from "node:dns";
import { request as httpRequest, type IncomingMessage, type OutgoingHttpHeaders } from "node:http";
import { request as httpsRequest } from "node:https";
import type { LookupFunction } from "node:net";
import { DroverError, parseEgressRule, type EgressRule, type EgressSettings } from "../../../contracts/index.ts";
import { egressDecision } from "../domain/egress-policy.ts";

export const MAX_REDIRECTS = 5;

/** A compiled egress policy: the tenant's rules (plus any the caller trusts) and the response cap. */
export interface EgressPolicy {
  readonly rules: readonly EgressRule[];
  readonly maxResponseBytes: number;
}

export function compileEgress(s: EgressSettings, extraAllow: readonly string[] = []): EgressPolicy {
  const rules = [...s.allow, ...extraAllow].map(parseEgressRule).filter((r): r is EgressRule => r !== undefined);
  return { rules, maxResponseBytes: s.maxResponseBytes };
}

export interface EgressRequest {
  readonly url: string;
  readonly method: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly body?: string;
  readonly signal: AbortSignal;
}

export interface EgressResponse {
  readonly status: number;
  /** The URL that answered (after redirects). */
  readonly url: string;
  readonly text: string;
}

type Resolve = (host: string) => Promise<readonly LookupAddress[]>;
const systemResolve: Resolve = (host) =>
  new Promise((ok, fail) => dnsLookup(host, { all: true }, (e, addrs) => (e ? fail(e) : ok(addrs))));

/**
 * One HTTP(S) exchange under the egress policy. For the URL and every redirect hop (at most
 * MAX_REDIRECTS, followed by hand): the host is resolved, EVERY address is checked
 * (`egress-denied` if any is refused), and the connection is made to the checked address — the
 * socket's lookup is pinned to it, so a second DNS answer cannot swap in another address between
 * check and connect. The body is read up to `maxResponseBytes` (`response-too-large`, the socket is
 * destroyed). Credentials (authorization, cookie) are not sent across origins on a redirect.
 * Rejects with the network error, or an AbortError when `signal` fires.
 */
export async function egressRequest(
  req: EgressRequest,
  policy: EgressPolicy,
  resolve: Resolve = systemResolve,
): Promise<EgressResponse> {
  let url = new URL(req.url);
  let { method, body } = req;
  let headers: Record<string, string> = { ...req.headers };
  for (let hop = 0; ; hop++) {
    const pinned = await checkedAddress(url, policy, resolve);
    const res = await send(url, method, headers, body, pinned, req.signal);
    const location = res.headers.location;
    if (res.statusCode !== undefined && res.statusCode >= 300 && res.statusCode < 400 && location) {
      res.destroy();
      if (hop >= MAX_REDIRECTS)
        throw new DroverError("too-many-redirects", `${req.method} ${req.url}: more than ${MAX_REDIRECTS} redirects`, {
          retryable: false,
        });
      const next = new URL(location, url);
      if (next.origin !== url.origin) headers = withoutCredentials(headers);
      // As fetch does: 303 (and 301/302 after POST) become a GET without a body; 307/308 keep both.
      if (res.statusCode === 303 || ((res.statusCode === 301 || res.statusCode === 302) && method === "POST")) {
        method = "GET";
        body = undefined;
        headers = Object.fromEntries(Object.entries(headers).filter(([k]) => !/^content-/i.test(k)));
      }
      url = next;
      continue;
    }
    const text = await readCapped(res, policy.maxResponseBytes, url);
    return { status: res.statusCode ?? 0, url: url.href, text };
  }
}

async function checkedAddress(url: URL, policy: EgressPolicy, resolve: Resolve): Promise<LookupAddress> {
  if (url.protocol !== "http:" && url.protocol !== "https:")
    throw new DroverError("egress-denied", `${url.protocol} URLs are not allowed (http and https only)`, {
      retryable: false,
    });
  const host = url.hostname.replace(/^\[|\]$/g, "").toLowerCase();
  const port = url.port ? Number(url.port) : url.protocol === "https:" ? 443 : 80;
  const literal = /^[0-9.]+$|:/.test(host);
  const addresses = literal ? [{ address: host, family: host.includes(":") ? 6 : 4 }] : await resolve(host);
  if (addresses.length === 0) throw new Error(`${host} resolved to no address`);
  for (const a of addresses) {
    const d = egressDecision(policy.rules, { host, port, address: a.address });
    if (!d.allowed)
      throw new DroverError(
        "egress-denied",
        `${host}:${port} resolves to ${a.address} (${d.addressClass}), which the tenant's egress policy does not allow; add it to egress.allow if intended`,
        { retryable: false, details: { host, port, address: a.address, addressClass: d.addressClass } },
      );
  }
  return addresses[0] as LookupAddress;
}

function send(
  url: URL,
  method: string,
  headers: Record<string, string>,
  body: string | undefined,
  pinned: LookupAddress,
  signal: AbortSignal,
): Promise<IncomingMessage> {
  const lookup: LookupFunction = (_host, opts, cb) => {
    if (opts.all) (cb as (e: null, a: LookupAddress[]) => void)(null, [pinned]);
    else cb(null, pinned.address, pinned.family);
  };
  const out: OutgoingHttpHeaders = { ...headers };
  if (body !== undefined) out["content-length"] = Buffer.byteLength(body);
  const request = url.protocol === "https:" ? httpsRequest : httpRequest;
  return new Promise((ok, fail) => {
    // A fresh connection per request (no agent): a pooled socket could have been opened for another pin.
    const r = request(url, { method, headers: out, lookup, signal, agent: false }, ok);
    r.once("error", fail);
    r.end(body);
  });
}

async function readCapped(res: IncomingMessage, max: number, url: URL): Promise<string> {
  const tooLarge = (what: string) =>
    new DroverError("response-too-large", `${url.host} answered ${what}, more than the ${max}-byte cap`, {
      retryable: false,
      details: { maxResponseBytes: max },
    });
  const declared = Number(res.headers["content-length"]);
  if (Number.isFinite(declared) && declared > max) {
    res.destroy();
    throw tooLarge(`content-length ${declared}`);
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of res as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > max) {
      res.destroy();
      throw tooLarge(`a body of over ${max} bytes`);
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString("utf8");
}

function withoutCredentials(h: Record<string, string>): Record<string, string> {
  return Object.fromEntries(
    Object.entries(h).filter(([k]) => !/^(authorization|cookie|proxy-authorization)$/i.test(k)),
  );
}
