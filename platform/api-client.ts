import type { DagInput } from "../contracts/index.ts";

/** A tiny client of drover's HTTP API for e2e and proof tests (real HTTP, bearer tokens). */
export function apiClient(baseUrl: string, token: string) {
  const call = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${baseUrl}${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body ? { "content-type": "application/json" } : {}) },
      ...(body ? { body: JSON.stringify(body) } : {}),
    });
    const text = await res.text();
    // Retry-After of a 429 or 503, in seconds (undefined when absent).
    const retryAfter = res.headers.get("retry-after") ?? undefined;
    return {
      status: res.status,
      body: text ? JSON.parse(text) : undefined,
      retryAfterSeconds: retryAfter === undefined ? undefined : Number(retryAfter),
    };
  };
  return {
    submit: (dag: DagInput, idempotencyKey?: string) =>
      call("POST", "/v1/runs", { dag, ...(idempotencyKey ? { idempotencyKey } : {}) }),
    run: (id: string) => call("GET", `/v1/runs/${id}`),
    events: (id: string) => call("GET", `/v1/runs/${id}/events`),
    get: (path: string) => call("GET", path),
    post: (path: string, body: unknown) => call("POST", path, body),
  };
}

/** A linear DAG of `n` compute steps of `stepMs` each, with a flaky step every `flakyEvery` steps. */
export function chainDag(n: number, stepMs: number, flakyEvery = 0): DagInput {
  return {
    name: `chain-${n}`,
    steps: Array.from({ length: n }, (_, i) => {
      const id = `s${String(i + 1).padStart(3, "0")}`;
      const dependsOn = i === 0 ? [] : [`s${String(i).padStart(3, "0")}`];
      return flakyEvery > 0 && (i + 1) % flakyEvery === 0
        ? {
            id,
            kind: "flaky" as const,
            dependsOn,
            params: { durationMs: stepMs, failAttempts: 1 },
            retry: { maxAttempts: 3, backoffMs: 10 },
          }
        : { id, kind: "compute" as const, dependsOn, params: { durationMs: stepMs } };
    }),
  };
}
