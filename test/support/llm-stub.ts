import { createServer, type IncomingMessage, type Server } from "node:http";

/**
 * A local stand-in for an OpenAI-compatible endpoint: `POST /v1/chat/completions` answers a chat
 * completion whose content is derived from the request (`echo: <last user message>`), so tests can
 * check that the prompt went out and the response came back into the journal. It records every
 * request. `failNext(n)` makes the next n calls answer 503 (retries). Also serves `GET|POST /echo`
 * for the `http` step kind. Listens on a free loopback port; `close()` stops it.
 */
export interface LlmStub {
  /** Base URL to configure as DROVER_LLM_BASE_URL (`http://127.0.0.1:<port>/v1`). */
  readonly baseUrl: string;
  /** URL of the plain echo endpoint for `http` steps. */
  readonly echoUrl: string;
  readonly requests: { path: string; body: unknown }[];
  failNext(n: number): void;
  close(): Promise<void>;
}

const readBody = async (req: IncomingMessage): Promise<string> => {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString("utf8");
};

export async function startLlmStub(): Promise<LlmStub> {
  const requests: { path: string; body: unknown }[] = [];
  let failures = 0;
  const server: Server = createServer((req, res) => {
    void readBody(req).then((text) => {
      let body: unknown = text;
      try {
        body = text ? JSON.parse(text) : undefined;
      } catch {
        /* keep the raw text */
      }
      requests.push({ path: req.url ?? "", body });
      if (failures > 0) {
        failures--;
        res.writeHead(503, { "content-type": "application/json" }).end('{"error":{"message":"stub overloaded"}}');
        return;
      }
      if (req.method === "POST" && req.url === "/v1/chat/completions") {
        const b = body as { model?: string; messages?: { role: string; content: string }[] };
        const last = [...(b.messages ?? [])].reverse().find((m) => m.role === "user")?.content ?? "";
        res.writeHead(200, { "content-type": "application/json" }).end(
          JSON.stringify({
            id: `chatcmpl-${requests.length}`,
            object: "chat.completion",
            created: 0,
            model: b.model ?? "stub",
            choices: [{ index: 0, message: { role: "assistant", content: `echo: ${last}` }, finish_reason: "stop" }],
            usage: {
              prompt_tokens: last.length,
              completion_tokens: last.length + 6,
              total_tokens: 2 * last.length + 6,
            },
          }),
        );
        return;
      }
      if (req.url?.startsWith("/echo")) {
        res
          .writeHead(200, { "content-type": "application/json" })
          .end(JSON.stringify({ method: req.method, path: req.url, body: text }));
        return;
      }
      res.writeHead(404).end("not found");
    });
  });
  await new Promise<void>((ok) => server.listen(0, "127.0.0.1", ok));
  const addr = server.address();
  const port = typeof addr === "object" && addr ? addr.port : 0;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    echoUrl: `http://127.0.0.1:${port}/echo`,
    requests,
    failNext: (n) => {
      failures = n;
    },
    close: () =>
      new Promise((ok) => {
        server.closeAllConnections();
        server.close(() => ok());
      }),
  };
}
