// DOM helpers. Every value from the API is set as text, never parsed as HTML.

/** h("td", { class: "x" }, "text", child) → an element. */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children.flat()) if (c !== undefined && c !== null) el.append(c instanceof Node ? c : String(c));
  return el;
}

/** A table with a header row; `rows` are arrays of cells (strings or nodes), or [cells, attrs]. */
export function table(headers, rows, attrs = {}) {
  return h(
    "table",
    attrs,
    h(
      "thead",
      {},
      h(
        "tr",
        {},
        headers.map((x) => h("th", {}, x)),
      ),
    ),
    h(
      "tbody",
      {},
      rows.map((r) =>
        Array.isArray(r[0])
          ? h(
              "tr",
              r[1],
              r[0].map((c) => h("td", {}, c)),
            )
          : h(
              "tr",
              {},
              r.map((c) => h("td", {}, c)),
            ),
      ),
    ),
  );
}

/** A state badge: `state-<value>` colours it (style.css). */
export const badge = (state) => h("span", { class: `state state-${state}`, "data-state": state }, state);

export const fmtTime = (iso) => (iso ? new Date(iso).toLocaleString() : "");
export const fmtMs = (ms) =>
  ms === null || ms === undefined ? "" : ms < 1000 ? `${ms} ms` : `${(ms / 1000).toFixed(1)} s`;
export const labelsText = (labels) =>
  Object.entries(labels ?? {})
    .map(([k, v]) => `${k}=${v}`)
    .join(", ");
