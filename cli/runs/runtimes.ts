import type { Command } from "commander";
import { table } from "./format.ts";
import type { CommandKit } from "./schedules.ts";

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

/**
 * The table of `drover runtimes` (docs/worker-versions.md "Drain and retire"): per runtime its
 * tenant, lifecycle, worker version (first 12 hex), whether it drains (takes no new run) and the
 * runs pinned to its version it holds; `-` for a runtime without a worker.
 */
export function runtimeTable(rows: readonly Json[]): string {
  return table([
    ["RUNTIME", "TENANT", "STATUS", "HOST", "VERSION", "DRAINING", "PINNED RUNS"],
    ...rows.map((r) => [
      r.runtimeInstanceId,
      r.tenantId ?? "-",
      r.status,
      r.hostProvider ?? "-",
      r.worker ? `${String(r.worker.version).slice(0, 12)}${r.worker.pinned ? " (pinned)" : ""}` : "-",
      r.worker ? (r.worker.draining ? "yes" : "no") : "-",
      r.worker ? String(r.worker.pinnedRuns) : "-",
    ]),
  ]);
}

/** `drover runtimes [--tenant T] [--all]` (operators): `GET /v1/runtimes`, live runtimes unless --all. */
export function addRuntimesCommand(group: Command, kit: CommandKit): void {
  group
    .description("operators: the runtimes, their worker version, whether they drain and their pinned runs")
    .option("--tenant <id>", "only this tenant's runtimes")
    .option("--all", "also fenced and retired runtimes")
    .action(async (o: Json) => {
      const body = kit.ok(await kit.client().call("GET", "/v1/runtimes"));
      const rows = (body.runtimes as Json[]).filter(
        (r) => (!o.tenant || r.tenantId === o.tenant) && (o.all || !["fenced", "retired"].includes(r.status)),
      );
      kit.print({ runtimes: rows }, () => runtimeTable(rows));
    });
}
