// The run list: GET /v1/runs with status, label and since filters, newest first, paged by the
// answer's `next` cursor (the cursors of earlier pages are kept in the hash so "newer" works too).
import { api, withQuery } from "./api.js";
import { badge, fmtTime, h, labelsText, table } from "./dom.js";

const PAGE = 20;

export function renderRuns({ me, view }, params) {
  const controller = new AbortController();
  const tenant = me.role === "operator" ? (params.get("tenant") ?? me.tenants[0] ?? "") : undefined;
  const status = params.get("status") ?? "";
  const label = params.get("label") ?? "";
  const since = params.get("since") ?? "";
  const trail = (params.get("trail") ?? "").split(",").filter(Boolean);
  const cursor = trail.at(-1);

  const input = (name, value, attrs = {}) => h("input", { name, value, ...attrs });
  const form = h(
    "form",
    { class: "filters", id: "run-filters" },
    tenant === undefined
      ? null
      : h(
          "label",
          {},
          "tenant",
          h(
            "select",
            { name: "tenant" },
            me.tenants.map((t) => h("option", { value: t, selected: t === tenant }, t)),
          ),
        ),
    h("label", {}, "status (comma-separated)", input("status", status, { placeholder: "queued,started" })),
    h("label", {}, "label k=v", input("label", label, { placeholder: "team=data" })),
    h("label", {}, "since (ISO time)", input("since", since, { placeholder: "2026-01-01T00:00:00Z" })),
    h("button", {}, "Filter"),
  );
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    const f = new FormData(form);
    const q = new URLSearchParams();
    for (const k of ["tenant", "status", "label", "since"]) if (f.get(k)) q.set(k, String(f.get(k)));
    location.hash = `#/runs?${q}`;
  });
  const body = h("div", {}, h("p", { class: "muted" }, "loading…"));
  view.append(h("h1", {}, "Runs"), form, body);

  const hashWith = (changes) => {
    const q = new URLSearchParams(params);
    for (const [k, v] of Object.entries(changes)) {
      if (v) q.set(k, v);
      else q.delete(k);
    }
    return `#/runs?${q}`;
  };

  api(withQuery("/v1/runs", { tenant, status, label, since, cursor, limit: PAGE }), { signal: controller.signal })
    .then((page) => {
      const runLink = (id) =>
        h(
          "a",
          { href: `#/runs/${encodeURIComponent(id)}${tenant ? `?tenant=${encodeURIComponent(tenant)}` : ""}` },
          id,
        );
      const rows = page.runs.map((r) => [
        [
          runLink(r.sharedRunId),
          badge(r.status),
          r.dagName ?? "",
          String(r.stepCount),
          labelsText(r.labels),
          fmtTime(r.submittedAt),
          fmtTime(r.endedAt),
        ],
        { "data-run": r.sharedRunId },
      ]);
      const pager = h(
        "div",
        { class: "pager" },
        trail.length ? h("a", { href: hashWith({ trail: trail.slice(0, -1).join(",") }) }, "← newer") : null,
        page.next
          ? h("a", { href: hashWith({ trail: [...trail, page.next].join(",") }), id: "older" }, "older →")
          : null,
        h("span", { class: "muted" }, `read model at stream sequence ${page.asOf}`),
      );
      body.replaceChildren(
        page.runs.length
          ? table(["run", "status", "DAG", "steps", "labels", "submitted", "ended"], rows, { id: "runs" })
          : h("p", { class: "muted" }, "no runs on this page"),
        pager,
      );
    })
    .catch((err) => {
      if (!controller.signal.aborted) body.replaceChildren(h("p", { class: "error" }, err.message));
    });
  return () => controller.abort();
}
