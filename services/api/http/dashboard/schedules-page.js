// The schedules page: GET /v1/schedules (status, spec, next fire, counts) with pause and resume
// buttons for the tenant's own token (operators read a tenant's schedules by naming it).
import { api, withQuery } from "./api.js";
import { badge, fmtTime, h, table } from "./dom.js";

const specText = (s) => (s.cron !== undefined ? `${s.cron} (${s.timezone})` : `every ${s.intervalMs} ms`);

export function renderSchedules({ me, view }, params) {
  const controller = new AbortController();
  const tenant = me.role === "operator" ? (params.get("tenant") ?? me.tenants[0] ?? "") : undefined;
  const body = h("div", {}, h("p", { class: "muted" }, "loading…"));
  view.append(h("h1", {}, "Schedules"), body);

  const change = async (id, action) => {
    await api(`/v1/schedules/${encodeURIComponent(id)}/${action}`, { method: "POST", body: {} });
    await load();
  };
  const button = (s) =>
    me.role !== "tenant" || s.status === "deleted"
      ? ""
      : h(
          "button",
          {
            type: "button",
            "data-action": s.status === "active" ? "pause" : "resume",
            onclick: () => void change(s.scheduleId, s.status === "active" ? "pause" : "resume").catch(show),
          },
          s.status === "active" ? "Pause" : "Resume",
        );
  const show = (err) => {
    if (!controller.signal.aborted) body.replaceChildren(h("p", { class: "error" }, err.message));
  };
  async function load() {
    const { schedules } = await api(withQuery("/v1/schedules", { tenant }), { signal: controller.signal });
    const rows = schedules.map((s) => [
      [
        s.scheduleId,
        badge(s.status),
        specText(s.spec),
        s.overlap,
        fmtTime(s.nextFireAt),
        String(s.fired),
        String(s.skipped),
        s.recent[0]?.sharedRunId
          ? h(
              "a",
              {
                href: `#/runs/${encodeURIComponent(s.recent[0].sharedRunId)}${tenant ? `?tenant=${encodeURIComponent(tenant)}` : ""}`,
              },
              s.recent[0].sharedRunId,
            )
          : "",
        button(s),
      ],
      { "data-schedule": s.scheduleId, "data-status": s.status },
    ]);
    body.replaceChildren(
      schedules.length
        ? table(["schedule", "status", "spec", "overlap", "next fire", "fired", "skipped", "last run", ""], rows, {
            id: "schedules",
          })
        : h("p", { class: "muted" }, "no schedules"),
    );
  }
  load().catch(show);
  return () => controller.abort();
}
