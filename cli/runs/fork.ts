import { readFileSync } from "node:fs";
import type { Command } from "commander";
import { table } from "./format.ts";
import type { CommandKit } from "./schedules.ts";

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const repeat = (v: string, all: string[]) => [...all, v];
const labelsOf = (ls: readonly string[]) =>
  Object.fromEntries(ls.map((l) => [l.slice(0, l.indexOf("=")), l.slice(l.indexOf("=") + 1)]));

/** `--input-patch` as JSON (inline, or `@file`). */
function patchOf(kit: CommandKit, raw: string | undefined): Json | undefined {
  if (raw === undefined) return undefined;
  try {
    return JSON.parse(raw.startsWith("@") ? readFileSync(raw.slice(1), "utf8") : raw) as Json;
  } catch (e) {
    return kit.fail(`--input-patch is not JSON: ${(e as Error).message}`);
  }
}

/** A bulk answer as a table, with the count and the cursor to continue. */
function bulkTable(body: Json): string {
  const rows = [
    ["RUN", "STATUS", "OUTCOME", "FORK"],
    ...(body.runs as Json[]).map((r) => [
      r.sharedRunId,
      r.status,
      r.error ? `${r.error.code}: ${r.error.message}` : (r.outcome ?? (body.dryRun ? "would act" : "")),
      r.forkRunId ?? "",
    ]),
  ];
  return (
    `${body.dryRun ? "dry run: " : ""}${body.matched} run(s) matched\n` +
    (body.runs.length ? table(rows) : "") +
    (body.next ? `more runs may match: --cursor ${body.next}\n` : "")
  );
}

const filterOptions = (c: Command): Command =>
  c
    .option("--status <s>", "only these statuses (comma-separated)")
    .option("--label <k=v>", "only runs with this label (repeatable)", repeat, [] as string[])
    .option("--since <time>", "only runs submitted at or after this ISO time")
    .option("--until <time>", "only runs submitted before this ISO time")
    .option("--dry-run", "list what would be acted on; change nothing")
    .option("--limit <n>", "act on at most this many runs (≤ 500)", "500")
    .option("--cursor <c>", "continue after a previous answer's cursor")
    .option("--tenant <id>", "operators: the tenant whose runs to select");

const bulkBody = (o: Json) => ({
  filter: {
    ...(o.status ? { status: String(o.status).split(",") } : {}),
    ...(o.label.length ? { label: o.label } : {}),
    ...(o.since ? { since: o.since } : {}),
    ...(o.until ? { until: o.until } : {}),
  },
  dryRun: o.dryRun === true,
  limit: Number(o.limit),
  ...(o.cursor ? { cursor: o.cursor } : {}),
});
const tenantQuery = (o: Json) => (o.tenant ? `?tenant=${encodeURIComponent(o.tenant)}` : "");

/** `drover runs fork`, `bulk-cancel` and `bulk-fork` (docs/fork.md). */
export function addForkCommands(group: Command, kit: CommandKit): void {
  group
    .command("fork")
    .description("a new run reusing this run's outputs before --from-step; that step and its downstream execute")
    .argument("<id>", "SharedRunId")
    .requiredOption("--from-step <step>", "the first step to execute again")
    .option("--input-patch <json>", "JSON merge patch of the input (inline, or @file)")
    .option("--label <k=v>", "the fork's labels (repeatable; default: the original's)", repeat, [] as string[])
    .option("--idempotency-key <key>", "the same key answers the same fork")
    .option("--tenant <id>", "operators: the run's tenant")
    .action(async (id: string, o: Json) => {
      const patch = patchOf(kit, o.inputPatch);
      const body = {
        fromStep: o.fromStep,
        ...(patch === undefined ? {} : { inputPatch: patch }),
        ...(o.label.length ? { labels: labelsOf(o.label) } : {}),
        ...(o.idempotencyKey ? { idempotencyKey: o.idempotencyKey } : {}),
      };
      const run = kit.ok(await kit.client().call("POST", `/v1/runs/${id}/fork${tenantQuery(o)}`, body));
      kit.print(run, () => `${run.sharedRunId}  ${run.status}  (fork of ${id} from ${o.fromStep})\n`);
    });
  filterOptions(
    group.command("bulk-cancel").description("ask to cancel every run the filter selects (try --dry-run first)"),
  )
    .option("--reason <text>", "why", "")
    .action(async (o: Json) => {
      const body = kit.ok(
        await kit.client().call("POST", `/v1/runs/bulk-cancel${tenantQuery(o)}`, { ...bulkBody(o), reason: o.reason }),
      );
      kit.print(body, () => bulkTable(body));
    });
  filterOptions(
    group.command("bulk-fork").description("fork every run the filter selects from --from-step (try --dry-run first)"),
  )
    .requiredOption("--from-step <step>", "the first step to execute again")
    .option("--input-patch <json>", "JSON merge patch of each input (inline, or @file)")
    .option("--idempotency-key <key>", "repeating the request with the same key forks no run twice")
    .action(async (o: Json) => {
      const patch = patchOf(kit, o.inputPatch);
      const req = {
        ...bulkBody(o),
        fromStep: o.fromStep,
        ...(patch === undefined ? {} : { inputPatch: patch }),
        ...(o.idempotencyKey ? { idempotencyKey: o.idempotencyKey } : {}),
      };
      const body = kit.ok(await kit.client().call("POST", `/v1/runs/bulk-fork${tenantQuery(o)}`, req));
      kit.print(body, () => bulkTable(body));
    });
}
