// The run page's waits (docs/control-flow.md "Waits"): each wait step's state, deadline, resolvers
// and the signal it got; for a wait with no signal yet, a tenant session gets a JSON payload field
// and Send, plus Approve / Reject that send {"approved": true|false}. The API decides who may
// resolve it: a token that is no resolver sees the 403 beside the buttons, and nothing is written.
import { api } from "./api.js";
import { badge, fmtTime, h, table } from "./dom.js";

export function waitControl({ base, signal, canSignal, onSent }) {
  const el = h("div", { id: "waits" });

  const send = (w, payload, note) =>
    api(`${base}/signals/${encodeURIComponent(w.name)}`, { method: "POST", body: { payload }, signal })
      .then((a) => {
        note.textContent = `${a.outcome} by ${a.signal.by}`;
        onSent();
      })
      .catch((err) => {
        note.textContent = err.message;
      });

  function controls(w) {
    if (!canSignal || w.signal !== null || w.state === "ended" || w.state === "timed-out") return "";
    const note = h("span", { class: "muted", "data-wait-note": w.name });
    const field = h("input", {
      type: "text",
      size: 24,
      placeholder: '{"approved": true}',
      "aria-label": `payload for ${w.name}`,
    });
    const button = (label, payload) => {
      const b = h("button", { type: "button", "data-wait-action": `${w.name}:${label}` }, label);
      b.addEventListener("click", () => {
        let p;
        try {
          p = payload();
        } catch (err) {
          note.textContent = `the payload is not JSON: ${err.message}`;
          return;
        }
        void send(w, p, note);
      });
      return b;
    };
    return h(
      "span",
      {},
      button("Approve", () => ({ approved: true })),
      " ",
      button("Reject", () => ({ approved: false })),
      " ",
      field,
      " ",
      button("Send", () => JSON.parse(field.value || "null")),
      " ",
      note,
    );
  }

  const update = (run) => {
    const waits = run.waits ?? [];
    if (waits.length === 0) return el.replaceChildren(h("p", { class: "muted" }, "none"));
    el.replaceChildren(
      table(
        ["step", "signal name", "state", "times out", "on timeout", "resolvers", "resolved by", ""],
        waits.map((w) => [
          [
            w.stepId,
            w.name,
            badge(w.state),
            w.timeoutAt ? fmtTime(w.timeoutAt) : "",
            w.onTimeout,
            w.resolvers ? w.resolvers.join(", ") : "any tenant token",
            w.signal ? `${w.signal.by} (sha256 ${w.signal.payloadDigest.slice(0, 12)}…)` : "",
            controls(w),
          ],
          { "data-wait": w.name, "data-state": w.state },
        ]),
      ),
    );
  };
  return { el, update };
}
