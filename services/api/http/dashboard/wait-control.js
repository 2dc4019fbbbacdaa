// The run page's waits (docs/control-flow.md "Waits"): each wait step's state, deadline, resolvers
// and the signal it got; for a wait with no signal yet, a tenant session whose token may resolve it
// (by GET /v1/me's name and roles: any token when the wait names no resolvers) gets Approve / Reject,
// which send {"approved": true|false}, and a JSON payload field with Send. The API still decides:
// a refused signal's error is shown beside the buttons, and nothing is written.
import { api } from "./api.js";
import { badge, fmtTime, h, table } from "./dom.js";

/** The API's rule (contracts/wait.ts mayResolve), to offer the buttons only to a token it would accept. */
const mayResolve = (resolvers, me) =>
  resolvers === null ||
  resolvers.some(
    (r) =>
      (me.name !== undefined && r === `token:${me.name}`) ||
      (r.startsWith("role:") && (me.roles ?? []).includes(r.slice(5))),
  );

export function waitControl({ base, signal, me, onSent }) {
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
    const allowed = me.role === "tenant" && mayResolve(w.resolvers, me);
    if (!allowed || w.signal !== null || !["pending", "open"].includes(w.state)) return "";
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
