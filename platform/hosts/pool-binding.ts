import { request, type ClientRequest } from "node:http";
import { runtimeEnv } from "./runtime-env.ts";
import type { HostSpec } from "./types.ts";

/** The bind path of a pooled runtime (services/runtime/shell/pool-bind.ts serves it). */
export const POOL_BIND_PATH = "/v1/pool/bind";

/**
 * What a binding sets in a pooled runtime: exactly the identity environment a cold start would get
 * (runtime-env.ts), minus the base (PATH, HOME), which the pooled process already has.
 */
export const bindingEnv = (spec: HostSpec, bindHost: string, port: number): Record<string, string> =>
  runtimeEnv(spec, bindHost, port, {});

export type BindReply =
  | { readonly ok: true; readonly port: number; readonly hostIncarnation: string }
  | { readonly ok: false; readonly detail: string };

/**
 * Posts one binding to a pooled runtime's bind endpoint (loopback for process hosts) with the pool
 * member's token; resolves with the bound runtime's answer once it serves commands. Never rejects:
 * a refused, failed or timed-out binding is `{ ok: false }`. node:http, not fetch, as for runtime
 * commands (platform/runtime-client.ts): undici's fetch was the provisioner's largest CPU item while
 * ten binds of a recovery burst returned (P=5 proof profile), and its first use loads undici.
 */
export function postBinding(
  bindEndpoint: string,
  poolToken: string,
  env: Readonly<Record<string, string>>,
  timeoutMs: number,
): Promise<BindReply> {
  const body = Buffer.from(JSON.stringify({ env }));
  return new Promise<BindReply>((resolve) => {
    const failed = (why: string) => resolve({ ok: false, detail: `bind failed: ${why.slice(0, 500)}` });
    let req: ClientRequest;
    try {
      req = request(
        `${bindEndpoint}${POOL_BIND_PATH}`,
        {
          method: "POST",
          agent: false, // one binding per member: nothing to keep alive (the member answers `connection: close`)
          headers: {
            authorization: `Bearer ${poolToken}`,
            "content-type": "application/json",
            "content-length": body.length,
          },
        },
        (res) => {
          const parts: Buffer[] = [];
          res.on("data", (c: Buffer) => parts.push(c));
          res.on("error", (e) => failed(e.message));
          res.on("close", () => {
            clearTimeout(timer);
            if (!res.complete) failed("the connection closed before the whole answer");
          });
          res.on("end", () => {
            clearTimeout(timer);
            resolve(answerOf(res.statusCode ?? 0, Buffer.concat(parts).toString("utf8")));
          });
        },
      );
    } catch (e) {
      return failed(String((e as Error).message ?? e)); // not an http:// endpoint
    }
    const timer = setTimeout(() => req.destroy(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
    req.on("error", (e) => {
      clearTimeout(timer);
      failed(e.message);
    });
    req.end(body);
  });
}

function answerOf(status: number, text: string): BindReply {
  let body: Record<string, unknown>;
  try {
    body = JSON.parse(text) as Record<string, unknown>;
  } catch {
    return { ok: false, detail: `bind answered ${status} with no JSON: ${text.slice(0, 500)}` };
  }
  if (status === 200 && typeof body.port === "number" && typeof body.hostIncarnation === "string")
    return { ok: true, port: body.port, hostIncarnation: body.hostIncarnation };
  return { ok: false, detail: `bind answered ${status}: ${JSON.stringify(body).slice(0, 500)}` };
}
