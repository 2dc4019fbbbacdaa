/**
 * Awaits runs' ends through the public API's event feed (`GET /v1/events`, Server-Sent Events),
 * one stream for all the benchmark's clients: a client waiting for its run costs the system one
 * frame, where polling `GET /v1/runs/:id` every 25 ms from 50 clients (2,000 requests/s) took more
 * CPU than everything it measured (bench/workloads W2: the api 54 CPU-s in one run).
 */
export interface RunEnds {
  /** Resolves when `sharedRunId` completed (also if it did before the call); rejects if it failed or was cancelled. */
  ended(sharedRunId: string, timeoutMs?: number): Promise<void>;
  close(): void;
}

const END_TYPES = ["run.completed", "run.failed", "run.cancelled"];

export async function runEnds(baseUrl: string, token: string): Promise<RunEnds> {
  const abort = new AbortController();
  const res = await fetch(`${baseUrl}/v1/events?from=now&types=${END_TYPES.join(",")}`, {
    headers: { authorization: `Bearer ${token}`, accept: "text/event-stream" },
    signal: abort.signal,
  });
  if (res.status !== 200 || !res.body) throw new Error(`GET /v1/events answered ${res.status}`);
  const seen = new Map<string, string>();
  const waiting = new Map<string, () => void>();
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  void (async () => {
    let buf = "";
    for (;;) {
      const { value, done } = await reader.read().catch(() => ({ value: undefined, done: true }));
      if (done) return;
      buf += value;
      let cut: number;
      while ((cut = buf.indexOf("\n\n")) >= 0) {
        const frame = buf.slice(0, cut);
        buf = buf.slice(cut + 2);
        const data = frame.split("\n").find((l) => l.startsWith("data: "));
        if (!data || frame.includes("\nevent:") || frame.startsWith("event:")) continue;
        const { event } = JSON.parse(data.slice(6)) as { event: { type: string; correlationId: string } };
        seen.set(event.correlationId, event.type);
        waiting.get(event.correlationId)?.();
      }
    }
  })();
  return {
    async ended(id, timeoutMs = 120_000) {
      if (!seen.has(id))
        await new Promise<void>((ok, fail) => {
          const t = setTimeout(() => fail(new Error(`run ${id} did not end within ${timeoutMs} ms`)), timeoutMs);
          waiting.set(id, () => {
            clearTimeout(t);
            waiting.delete(id);
            ok();
          });
        });
      if (seen.get(id) !== "run.completed") throw new Error(`run ${id} ended ${seen.get(id)}`);
    },
    close: () => abort.abort(),
  };
}
