import { z } from "zod";
import type { EgressRequest, EgressResponse } from "./egress-request.ts";

/** An llm step's params once its references are resolved. */
interface Params {
  readonly model: string;
  readonly prompt: string;
  readonly system?: string;
  readonly maxTokens: number;
  readonly temperature: number;
  readonly timeoutMs: number;
}

const ChatCompletion = z.object({
  id: z.string().optional(),
  model: z.string().optional(),
  choices: z
    .array(
      z.object({
        message: z.object({ content: z.string().nullable() }),
        finish_reason: z.string().nullable().optional(),
      }),
    )
    .min(1),
  usage: z
    .object({ prompt_tokens: z.number(), completion_tokens: z.number(), total_tokens: z.number() })
    .partial()
    .optional(),
});

/**
 * One OpenAI-compatible `POST <base>/chat/completions` call. The prompt and the response are both
 * returned so the journal records what was asked and what came back; a resumed execution reuses
 * them instead of asking again (LLM answers are not reproducible).
 *
 * `send` is the egress-checked exchange (egress-request.ts): `egress-denied`, `response-too-large`
 * and `too-many-redirects` come from it. Other failure modes: non-2xx status, a body that is not a chat completion, timeout (params.timeoutMs, applied by the caller's `send`) or
 * abort — each rejects with a message naming the cause; the executor retries per the step policy.
 */
export async function callChatCompletion(
  baseUrl: string,
  p: Params,
  apiKey: string | undefined,
  send: (r: Omit<EgressRequest, "signal">) => Promise<EgressResponse>,
): Promise<Record<string, unknown>> {
  const url = `${baseUrl.replace(/\/+$/, "")}/chat/completions`;
  const messages = [...(p.system ? [{ role: "system", content: p.system }] : []), { role: "user", content: p.prompt }];
  const res = await send({
    url,
    method: "POST",
    // The bearer key is resolved from the tenant's secrets for this call only; it is never recorded.
    headers: { "content-type": "application/json", ...(apiKey ? { authorization: `Bearer ${apiKey}` } : {}) },
    body: JSON.stringify({ model: p.model, messages, max_tokens: p.maxTokens, temperature: p.temperature }),
  });
  const text = res.text;
  if (res.status < 200 || res.status > 299) throw new Error(`llm ${url} answered ${res.status}: ${text.slice(0, 200)}`);
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    throw new Error(`llm ${url} answered non-JSON: ${text.slice(0, 200)}`);
  }
  const parsed = ChatCompletion.safeParse(raw);
  if (!parsed.success)
    throw new Error(
      `llm ${url} answered something that is not a chat completion: ${parsed.error.issues[0]?.message ?? ""}`,
    );
  const choice = parsed.data.choices[0];
  return {
    model: parsed.data.model ?? p.model,
    prompt: p.prompt,
    system: p.system ?? null,
    response: choice?.message.content ?? "",
    finishReason: choice?.finish_reason ?? null,
    completionId: parsed.data.id ?? null,
    promptTokens: parsed.data.usage?.prompt_tokens ?? null,
    completionTokens: parsed.data.usage?.completion_tokens ?? null,
  };
}
