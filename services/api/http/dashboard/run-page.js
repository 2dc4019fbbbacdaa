// One run: its DAG's steps with their live state, the live event feed, the causal timeline and
// incidents from the read models, a cancel button and a fork control (fork-control.js). The steps come from GET /v1/runs/:id (the
// server's fold) and are refreshed as the run's own feed (GET /v1/runs/:id/events, SSE) brings
// events; a completed step is marked at once from its `exec.step-completed` event.
import { api, follow, withQuery } from "./api.js";
import { badge, fmtMs, fmtTime, h, labelsText, table } from "./dom.js";
import { forkControl } from "./fork-control.js";
import { waitControl } from "./wait-control.js";

const TERMINAL = new Set(["completed", "failed", "cancelled", "rejected"]);

export function renderRun({ me, view }, id, params) {
  const controller = new AbortController();
  const { signal } = controller;
  const tenant = me.role === "operator" ? (params.get("tenant") ?? undefined) : undefined;
  const url = (path, q = {}) => withQuery(path, { ...q, tenant });
  const base = `/v1/runs/${encodeURIComponent(id)}`;

  const el = {
    summary: h("div", { class: "summary", id: "run-summary" }),
    actions: h("div", {}),
    feedStatus: h("span", { class: "muted", id: "feed-status" }, "connecting…"),
    steps: h("div", { id: "steps" }),
    events: h("tbody", { id: "events" }),
    timeline: h("div", { id: "timeline" }, h("p", { class: "muted" }, "waiting for the read models…")),
    incidents: h("div", { id: "incidents" }, h("p", { class: "muted" }, "none")),
  };
  const cancel = h("button", { type: "button", id: "cancel", disabled: true }, "Cancel run");
  const cancelNote = h("span", { class: "muted", id: "cancel-note" });
  const fork = forkControl({ base, url, signal, tenant });
  el.actions.append(cancel, " ", cancelNote, " ", fork.el);
  const waits = waitControl({ base, signal, me, onSent: () => refresh() });
  view.append(
    h("p", {}, h("a", { href: tenant ? `#/runs?tenant=${encodeURIComponent(tenant)}` : "#/runs" }, "← runs")),
    h("h1", {}, "Run ", h("code", {}, id)),
    el.summary,
    el.actions,
    h("h2", {}, "Steps ", el.feedStatus),
    el.steps,
    h("h2", {}, "Waits"),
    waits.el,
    h("h2", {}, "Timeline"),
    el.timeline,
    h("h2", {}, "Incidents"),
    el.incidents,
    h("h2", {}, "Events (live)"),
    h(
      "table",
      {},
      h(
        "thead",
        {},
        h(
          "tr",
          {},
          ["seq", "time", "type", "detail"].map((x) => h("th", {}, x)),
        ),
      ),
      el.events,
    ),
  );

  let run;
  let endSeq; // the sequence of the run's terminal event, from the feed's `end` frame
  const showError = (where, err) => {
    if (!signal.aborted) where.replaceChildren(h("p", { class: "error" }, err.message));
  };

  // A child or parent run's page (docs/control-flow.md "Child runs"), for the same tenant.
  const runLink = (id) =>
    h(
      "a",
      {
        href: `#/runs/${encodeURIComponent(id)}${tenant ? `?tenant=${encodeURIComponent(tenant)}` : ""}`,
        "data-run-link": id,
      },
      id,
    );

  function renderRunView(r) {
    run = r;
    const rows = [
      ["status", badge(r.status)],
      ["DAG", r.dag?.name ?? ""],
      ["labels", labelsText(r.labels)],
      ["execution", r.executionId ?? ""],
      ["runtime", r.placement?.runtimeInstanceId ?? ""],
      ["rerun of", r.rerunOf ?? ""],
      ["forked from", r.forkedFrom ? `${r.forkedFrom.sharedRunId} at ${r.forkedFrom.fromStep}` : ""],
      ["parent run", r.parent ? h("span", {}, runLink(r.parent.sharedRunId), ` (step ${r.parent.stepId})`) : ""],
      [
        "child runs",
        h(
          "span",
          {},
          ...(r.children ?? []).flatMap((c, i) => [i ? ", " : "", runLink(c.sharedRunId), ` (${c.stepId})`]),
        ),
      ],
      ["cancel requested", r.cancelRequested ? `by ${r.cancelRequested.by}: ${r.cancelRequested.reason}` : ""],
      ["last reason", r.lastReason ?? ""],
    ];
    el.summary.replaceChildren(
      ...rows.flatMap(([k, v]) => [h("span", { class: "muted" }, k), h("span", { "data-field": k }, v)]),
    );
    el.summary.dataset.status = r.status;
    cancel.disabled = TERMINAL.has(r.status) || r.cancelRequested !== null;
    fork.update(r, TERMINAL.has(r.status));
    waits.update(r);
    el.steps.replaceChildren(
      table(
        ["step", "kind", "depends on", "state", "attempts", "duration", "error / retry", "map items"],
        r.steps.map((s) => [
          [
            s.id,
            s.kind,
            s.dependsOn.join(", "),
            badge(s.state),
            String(s.attempts),
            fmtMs(s.durationMs),
            s.lastError ? `${s.lastError}${s.retryAt ? ` (retry ${fmtTime(s.retryAt)})` : ""}` : "",
            mapItems(s.items),
          ],
          { "data-step": s.id, "data-state": s.state },
        ]),
      ),
    );
  }

  // A map step's item counts (docs/control-flow.md "Map"), from GET /v1/runs/:id; "" for other steps.
  function mapItems(items) {
    if (!items) return "";
    if (items.total === null) return "not expanded yet";
    return `${items.completed}/${items.total} completed, ${items.failed} failed, ${items.open} open`;
  }

  let pending;
  const refresh = () => {
    clearTimeout(pending);
    pending = setTimeout(() => {
      api(url(base), { signal })
        .then(renderRunView)
        .catch((err) => showError(el.summary, err));
    }, 150);
  };

  function markStep(stepId, state) {
    const row = el.steps.querySelector(`tr[data-step="${CSS.escape(stepId)}"]`);
    if (!row || row.dataset.state === "completed") return;
    row.dataset.state = state;
    row.children[3].replaceChildren(badge(state));
  }

  function onFrame({ kind, data }) {
    if (kind === "end") {
      endSeq = data.seq;
      refresh();
      void refreshTimeline();
      return;
    }
    if (kind !== "message") return;
    const e = data.event;
    const detail = e.data?.stepId ?? e.data?.reason?.code ?? e.data?.runtimeInstanceId ?? "";
    el.events.append(
      h(
        "tr",
        { "data-seq": data.seq },
        [String(data.seq), fmtTime(data.time), e.type, String(detail)].map((c) => h("td", {}, c)),
      ),
    );
    if (e.type === "exec.step-completed") markStep(e.data.stepId, "completed");
    refresh();
  }

  // The causal chain and incidents are read models: shown once they include the run's submission.
  let timelineTimer;
  async function refreshTimeline() {
    clearTimeout(timelineTimer);
    if (signal.aborted || !run) return;
    try {
      const { asOf } = await api(url("/v1/forensics", { runId: id, limit: 1 }), { signal });
      if (asOf >= (run.submittedSeq ?? Infinity)) {
        const t = await api(url(`${base}/timeline`), { signal });
        el.timeline.replaceChildren(
          table(
            ["seq", "time", "phase", "event", "summary"],
            t.chain.map((c) => [String(c.seq), fmtTime(c.at), c.phase, c.type, c.summary]),
          ),
          h("p", { class: "muted" }, `read models at stream sequence ${t.asOf}`),
        );
        el.incidents.replaceChildren(
          t.incidents.length
            ? table(
                ["incident", "runtime", "status", "suspected", "fenced", "items"],
                t.incidents.map((i) => [
                  i.incidentId,
                  i.runtimeInstanceId,
                  badge(i.status),
                  i.suspected ? `${fmtTime(i.suspected.at)} ${i.suspected.reasonCode}` : "",
                  i.fenced ? fmtTime(i.fenced.at) : "",
                  i.items.map((x) => `${x.class}${x.outcome ? ` → ${x.outcome}` : ""}`).join(", "),
                ]),
              )
            : h("p", { class: "muted" }, "none"),
        );
        if (endSeq !== undefined && asOf >= endSeq) return;
      }
    } catch (err) {
      showError(el.timeline, err);
    }
    timelineTimer = setTimeout(() => void refreshTimeline(), endSeq === undefined ? 3000 : 1000);
  }

  cancel.addEventListener("click", () => {
    cancel.disabled = true;
    api(url(`${base}/cancel`), { method: "POST", body: { reason: "cancelled from the dashboard" }, signal })
      .then((a) => {
        cancelNote.textContent = `cancel ${a.outcome}`;
        renderRunView(a.run);
      })
      .catch((err) => {
        cancelNote.textContent = err.message;
        cancel.disabled = false;
      });
  });

  api(url(base), { signal })
    .then((r) => {
      renderRunView(r);
      void refreshTimeline();
      return follow(url(`${base}/events`), {
        signal,
        onFrame,
        onStatus: (s) => (el.feedStatus.textContent = s === "live" ? "(live)" : `(${s})`),
      });
    })
    .catch((err) => showError(el.summary, err));

  return () => {
    controller.abort();
    clearTimeout(pending);
    clearTimeout(timelineTimer);
  };
}
