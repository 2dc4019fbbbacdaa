import { createServer, type IncomingMessage, type Server } from "node:http";

/**
 * What the tenant-code tests talk to instead of the world (served by the test, not the product):
 * an OpenAI-compatible `POST /v1/chat/completions` (answer derived from the prompt, so equal
 * prompts give equal answers; every call counted per prompt with the bearer key it carried), a
 * document at `GET /doc/<key>` (GETs counted per key) and `POST /audit/<executionId>/<stepId>`
 * (the examples' side-effect counter). `hold(match)` parks completions whose prompt matches until
 * the returned release is called.
 */
export interface OpenAiFake {
  readonly baseUrl: string;
  readonly url: string;
  readonly completions: Map<string, number>;
  readonly bearers: Set<string>;
  readonly docGets: Map<string, number>;
  readonly audits: Map<string, number>;
  /** Every request body, raw, for tests that look for values that must never be sent. */
  readonly bodies: string[];
  hold(match: (prompt: string) => boolean): () => void;
  close(): Promise<void>;
}

const readBody = async (req: IncomingMessage): Promise<string> => {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString("utf8");
};

export async function startOpenAiFake(document: string, host = "127.0.0.1"): Promise<OpenAiFake> {
  const completions = new Map<string, number>();
  const bearers = new Set<string>();
  const docGets = new Map<string, number>();
  const audits = new Map<string, number>();
  const bodies: string[] = [];
  const holds: { match: (p: string) => boolean; released: Promise<void> }[] = [];
  const bump = (m: Map<string, number>, k: string) => m.set(k, (m.get(k) ?? 0) + 1);
  const server: Server = createServer((req, res) => {
    void readBody(req).then(async (text) => {
      bodies.push(text);
      const url = req.url ?? "";
      if (req.method === "GET" && url.startsWith("/doc/")) {
        bump(docGets, url.slice(5));
        res.writeHead(200, { "content-type": "text/plain" }).end(document);
        return;
      }
      if (req.method === "POST" && url.startsWith("/audit/")) {
        bump(audits, url.slice(7));
        res.writeHead(204).end();
        return;
      }
      if (req.method === "POST" && url === "/v1/chat/completions") {
        const auth = req.headers.authorization ?? "";
        if (auth) bearers.add(auth);
        const b = JSON.parse(text) as { model: string; messages: { role: string; content: string }[] };
        const prompt = b.messages.find((m) => m.role === "user")?.content ?? "";
        bump(completions, prompt);
        for (const h of holds) if (h.match(prompt)) await h.released;
        const words = prompt.split(/\s+/).slice(0, 4).join(" ");
        res.writeHead(200, { "content-type": "application/json" }).end(
          JSON.stringify({
            id: `chatcmpl-${completions.size}`,
            model: b.model,
            choices: [{ message: { role: "assistant", content: `about: ${words}` }, finish_reason: "stop" }],
            usage: { prompt_tokens: prompt.length, completion_tokens: 5, total_tokens: prompt.length + 5 },
          }),
        );
        return;
      }
      res.writeHead(404).end();
    });
  });
  await new Promise<void>((ok) => server.listen(0, host, ok));
  const port = (server.address() as { port: number }).port;
  return {
    baseUrl: `http://${host}:${port}/v1`,
    url: `http://${host}:${port}`,
    completions,
    bearers,
    docGets,
    audits,
    bodies,
    hold(match) {
      let release!: () => void;
      const h = { match, released: new Promise<void>((ok) => (release = ok)) };
      holds.push(h);
      return () => {
        holds.splice(holds.indexOf(h), 1);
        release();
      };
    },
    close: () =>
      new Promise<void>((ok) => {
        server.closeAllConnections();
        server.close(() => ok());
      }),
  };
}
