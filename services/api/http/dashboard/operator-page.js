// The operator page: runtimes with their capacity, the global queue per tenant, and the latest
// incidents; refreshed every few seconds.
import { api } from "./api.js";
import { badge, fmtTime, h, table } from "./dom.js";

const REFRESH_MS = 3000;

export function renderOperator({ view }) {
  const controller = new AbortController();
  const { signal } = controller;
  const el = {
    capacity: h("div", { id: "capacity" }, h("p", { class: "muted" }, "loading…")),
    runtimes: h("div", { id: "runtimes" }),
    queue: h("div", { id: "queue" }, h("p", { class: "muted" }, "loading…")),
    incidents: h("div", { id: "incidents" }, h("p", { class: "muted" }, "loading…")),
  };
  view.append(
    h("h1", {}, "Operator"),
    h("h2", {}, "Capacity"),
    el.capacity,
    el.runtimes,
    h("h2", {}, "Queue (runs waiting for placement)"),
    el.queue,
    h("h2", {}, "Incidents"),
    el.incidents,
  );
  const fail = (where) => (err) => {
    if (!signal.aborted) where.replaceChildren(h("p", { class: "error" }, err.message));
  };

  async function capacity() {
    const [cap, { runtimes }] = await Promise.all([api("/v1/capacity", { signal }), api("/v1/runtimes", { signal })]);
    const byId = new Map(runtimes.map((r) => [r.runtimeInstanceId, r]));
    el.capacity.replaceChildren(
      h(
        "p",
        {},
        `${cap.runtimes.length} runtimes, ${cap.accepting} accepting runs, ${cap.availableSlots} slots free (at ${fmtTime(cap.at)})`,
      ),
    );
    el.runtimes.replaceChildren(
      table(
        [
          "runtime",
          "tenant",
          "isolation",
          "transport",
          "host",
          "state",
          "endpoint",
          "free slots",
          "accepts runs",
          "incident",
        ],
        cap.runtimes.map((c) => {
          const r = byId.get(c.runtimeInstanceId) ?? {};
          return [
            [
              c.runtimeInstanceId,
              c.tenantId ?? "(shared)",
              c.isolationMode ?? "",
              c.transport ?? "",
              r.hostProvider ?? "",
              badge(c.status),
              r.endpoint ?? "",
              String(c.availableSlots),
              c.canAcceptRun ? "yes" : c.reasons.join(", "),
              r.incidentId ?? "",
            ],
            { "data-runtime": c.runtimeInstanceId },
          ];
        }),
      ),
    );
  }

  async function queue() {
    const q = await api("/v1/queue", { signal });
    el.queue.replaceChildren(
      h("p", { id: "queue-total" }, `${q.total} runs waiting`),
      table(
        ["tenant", "waiting"],
        Object.entries(q.byTenant).map(([t, n]) => [t, String(n)]),
      ),
    );
  }

  async function incidents() {
    const { incidents: list, asOf } = await api("/v1/incidents?limit=50", { signal });
    el.incidents.replaceChildren(
      list.length
        ? table(
            ["incident", "runtime", "owner", "status", "tenants", "suspected", "fenced", "planned items"],
            list.map((i) => [
              i.incidentId,
              i.runtimeInstanceId,
              i.ownerTenantId ?? "(shared)",
              badge(i.status),
              i.tenantIds.join(", "),
              i.suspected ? `${fmtTime(i.suspected.at)} ${i.suspected.reasonCode}` : "",
              i.fenced ? fmtTime(i.fenced.at) : "",
              i.planned ? String(i.planned.itemCount) : "",
            ]),
          )
        : h("p", { class: "muted" }, "no incidents"),
      h("p", { class: "muted" }, `read models at stream sequence ${asOf}`),
    );
  }

  let timer;
  const tick = async () => {
    await Promise.all([
      capacity().catch(fail(el.capacity)),
      queue().catch(fail(el.queue)),
      incidents().catch(fail(el.incidents)),
    ]);
    if (!signal.aborted) timer = setTimeout(() => void tick(), REFRESH_MS);
  };
  void tick();
  return () => {
    controller.abort();
    clearTimeout(timer);
  };
}
