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
 * a refused, failed or timed-out binding is `{ ok: false }`.
 */
export async function postBinding(
  bindEndpoint: string,
  poolToken: string,
  env: Readonly<Record<string, string>>,
  timeoutMs: number,
): Promise<BindReply> {
  try {
    const res = await fetch(`${bindEndpoint}${POOL_BIND_PATH}`, {
      method: "POST",
      headers: { authorization: `Bearer ${poolToken}`, "content-type": "application/json" },
      body: JSON.stringify({ env }),
      signal: AbortSignal.timeout(timeoutMs),
    });
    const body = (await res.json()) as Record<string, unknown>;
    if (res.status === 200 && typeof body.port === "number" && typeof body.hostIncarnation === "string")
      return { ok: true, port: body.port, hostIncarnation: body.hostIncarnation };
    return { ok: false, detail: `bind answered ${res.status}: ${JSON.stringify(body).slice(0, 500)}` };
  } catch (e) {
    return { ok: false, detail: `bind failed: ${String((e as Error).message ?? e).slice(0, 500)}` };
  }
}
