/** A small client of drover's HTTP API for the CLI: bearer token, JSON, and the per-run SSE feed. */
export interface ApiAnswer {
  readonly status: number;
  readonly body: Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
}

/** The API did not answer (network, 5xx after the answer): exit 3. */
export class Unavailable extends Error {
  override readonly name = "Unavailable";
}

export interface SseMessage {
  readonly id?: string;
  readonly event: string;
  readonly data: any; // eslint-disable-line @typescript-eslint/no-explicit-any
}

export function apiClient(baseUrl: string, token: string) {
  const headers = { authorization: `Bearer ${token}` };
  const call = async (method: string, path: string, body?: unknown, extra: Record<string, string> = {}) => {
    let res: Response;
    try {
      res = await fetch(new URL(path, baseUrl), {
        method,
        headers: { ...headers, ...extra, ...(body === undefined ? {} : { "content-type": "application/json" }) },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
    } catch (e) {
      throw new Unavailable(`cannot reach ${baseUrl}: ${(e as Error).message}`);
    }
    const text = await res.text();
    let parsed: ApiAnswer["body"] = {};
    try {
      parsed = text ? JSON.parse(text) : {};
    } catch {
      parsed = { text };
    }
    return { status: res.status, body: parsed } satisfies ApiAnswer;
  };
  return {
    call,
    /** Follows one run's feed (`GET /v1/runs/:id/events`, text/event-stream) until it ends. */
    async *follow(id: string): AsyncGenerator<SseMessage> {
      let res: Response;
      try {
        res = await fetch(new URL(`/v1/runs/${id}/events`, baseUrl), {
          headers: { ...headers, accept: "text/event-stream" },
        });
      } catch (e) {
        throw new Unavailable(`cannot reach ${baseUrl}: ${(e as Error).message}`);
      }
      if (res.status !== 200) {
        const body = (await res.json().catch(() => ({}))) as ApiAnswer["body"];
        yield { event: "error", data: { status: res.status, ...body } };
        return;
      }
      const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
      let buf = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return;
        buf += value;
        for (let i = buf.indexOf("\n\n"); i >= 0; i = buf.indexOf("\n\n")) {
          const raw = buf.slice(0, i);
          buf = buf.slice(i + 2);
          const field = (n: string) =>
            raw
              .split("\n")
              .find((l) => l.startsWith(`${n}: `))
              ?.slice(n.length + 2);
          const data = field("data");
          if (data === undefined) continue;
          const id = field("id");
          yield { ...(id ? { id } : {}), event: field("event") ?? "message", data: JSON.parse(data) };
        }
      }
    },
  };
}
export type ApiClient = ReturnType<typeof apiClient>;
