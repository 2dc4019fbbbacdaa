import type { Command } from "commander";
import type { CommandKit } from "./schedules.ts";

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

/** One line of a tenant's deploy state (`drover workers`, `drover workers deploy`). */
export function deployLine(b: Json): string {
  const d = b.deployed;
  const head = d
    ? `${b.tenantId}  deployed ${String(d.version).slice(0, 12)}${d.previous ? ` (was ${String(d.previous).slice(0, 12)})` : ""}  kinds ${(d.kinds as string[]).join(",") || "none"}${d.requestedBy ? `  asked by ${d.requestedBy}` : ""}`
    : `${b.tenantId}  never deployed by event`;
  const pending =
    b.pendingRequestSeq !== null && b.pendingRequestSeq !== undefined ? `  request ${b.pendingRequestSeq} pending` : "";
  return `${b.outcome ? `${b.outcome}: ` : ""}${head}${pending}\n`;
}

/**
 * `drover workers [--tenant T]` (the tenant's last deploy) and `drover workers deploy [--tenant T]
 * [--wait-ms N]`: asks the provisioner to deploy the worker its configuration names now
 * (docs/worker-versions.md "Deploys as events"); new runs go to that version, older runtimes drain.
 */
export function addWorkersCommands(group: Command, kit: CommandKit): void {
  const q = (tenant?: string) => (tenant ? `?tenant=${encodeURIComponent(tenant)}` : "");
  group
    .description("the tenant's deployed worker version; `deploy` deploys the worker as configured now")
    .option("--tenant <id>", "operators: the tenant")
    .action(async (o: { tenant?: string }) => {
      const body = kit.ok(await kit.client().call("GET", `/v1/workers${q(o.tenant)}`));
      kit.print(body, () => deployLine(body));
    });
  group
    .command("deploy")
    .description("deploy the tenant's worker (the provisioner builds it and records worker.deployed)")
    .option("--tenant <id>", "operators: the tenant")
    .option("--wait-ms <n>", "how long to wait for the provisioner's answer", "20000")
    .action(async (o: { tenant?: string; waitMs: string }) => {
      const waitMs = Number(o.waitMs);
      if (!Number.isInteger(waitMs) || waitMs < 0) kit.fail(`--wait-ms must be a whole number of ms, not ${o.waitMs}`);
      const body = kit.ok(await kit.client().call("POST", `/v1/workers/deploy${q(o.tenant)}`, { waitMs }));
      kit.print(body, () => deployLine(body));
    });
}
