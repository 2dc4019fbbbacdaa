import { Gauge, type Registry } from "prom-client";
import type { RunIndex } from "./run-index.ts";

/**
 * `drover_runs{tenant,status}`: the runs admission's index holds (every run of the stream), by
 * tenant and status, counted on each scrape. A submission that failed validation (no status yet)
 * is left out.
 */
export function registerRunsGauge(registry: Registry, index: RunIndex): void {
  new Gauge({
    name: "drover_runs",
    help: "runs by tenant and status, as admission folded them from the stream",
    labelNames: ["tenant", "status"],
    registers: [registry],
    collect() {
      const by = new Map<string, { tenant: string; status: string; n: number }>();
      for (const r of index.runs.values()) {
        if (r.state.status === "none") continue;
        const key = `${r.tenantId}\u0000${r.state.status}`;
        const e = by.get(key) ?? { tenant: r.tenantId, status: r.state.status, n: 0 };
        e.n++;
        by.set(key, e);
      }
      // Terminal runs dropped from memory (RunIndex.maxTerminalRuns) still count.
      for (const [key, n] of index.evictedByStatus()) {
        const [tenant, status] = key.split("\u0000") as [string, string];
        const e = by.get(key) ?? { tenant, status, n: 0 };
        e.n += n;
        by.set(key, e);
      }
      this.reset();
      for (const { tenant, status, n } of by.values()) this.set({ tenant, status }, n);
    },
  });
}
