// The API as the dashboard uses it: bearer token from sessionStorage (typed by the user, never in
// the page), JSON answers, and Server-Sent Events read with fetch (EventSource cannot send the
// Authorization header and would put the token in the URL).

const KEY = "drover-token";
export const session = {
  token: () => sessionStorage.getItem(KEY) ?? "",
  set: (t) => sessionStorage.setItem(KEY, t),
  clear: () => sessionStorage.removeItem(KEY),
};

export class ApiError extends Error {
  constructor(status, body) {
    super(body?.error?.message ?? `HTTP ${status}`);
    this.status = status;
    this.code = body?.error?.code;
  }
}

const headers = (extra = {}) => ({ authorization: `Bearer ${session.token()}`, ...extra });

/** GET (or `method` with a JSON body) → the parsed answer; a non-2xx answer throws ApiError. */
export async function api(path, { method = "GET", body, signal } = {}) {
  const r = await fetch(path, {
    method,
    signal,
    headers: headers(body === undefined ? {} : { "content-type": "application/json" }),
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = await r.json().catch(() => ({}));
  if (!r.ok) throw new ApiError(r.status, json);
  return json;
}

/** `path?query` with the defined values of `params` (arrays repeat the key). */
export function withQuery(path, params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params))
    for (const x of Array.isArray(v) ? v : [v]) if (x !== undefined && x !== null && x !== "") q.append(k, String(x));
  const s = q.toString();
  return s ? `${path}?${s}` : path;
}

/**
 * Follows an SSE feed until `signal` aborts or an `end` frame arrives, calling `onFrame({kind, data})`
 * (`kind` is "message", "caught-up", "invalid" or "end"). A dropped connection is resumed after the
 * last id seen (Last-Event-ID), so no event is shown twice or missed. `onStatus` hears "live",
 * "reconnecting" and "ended".
 */
export async function follow(path, { signal, onFrame, onStatus = () => {} }) {
  let last;
  for (;;) {
    try {
      const r = await fetch(path, {
        signal,
        headers: headers({ accept: "text/event-stream", ...(last ? { "last-event-id": String(last) } : {}) }),
      });
      if (!r.ok) throw new ApiError(r.status, await r.json().catch(() => ({})));
      const reader = r.body.pipeThrough(new TextDecoderStream()).getReader();
      let buf = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buf += value;
        let i;
        while ((i = buf.indexOf("\n\n")) >= 0) {
          const frame = buf.slice(0, i);
          buf = buf.slice(i + 2);
          const kind = /^event: (.*)$/m.exec(frame)?.[1] ?? "message";
          const id = /^id: (.*)$/m.exec(frame)?.[1];
          const data = /^data: (.*)$/m.exec(frame)?.[1];
          if (id) last = id;
          if (data === undefined) continue;
          if (kind === "caught-up") onStatus("live");
          onFrame({ kind, data: JSON.parse(data) });
          if (kind === "end") {
            onStatus("ended");
            return;
          }
        }
      }
    } catch (err) {
      if (signal.aborted) return;
      if (err instanceof ApiError && err.status < 500) throw err;
    }
    if (signal.aborted) return;
    onStatus("reconnecting");
    await new Promise((ok) => setTimeout(ok, 1000));
  }
}
