import { readFileSync } from "node:fs";
import type { Command } from "commander";
import type { ApiAnswer, ApiClient } from "./client.ts";
import { table } from "./format.ts";

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

/** What the schedule commands share with `drover runs` (program.ts): the client, answer check and printer. */
export interface CommandKit {
  client(): ApiClient;
  ok(a: ApiAnswer): Json;
  print(body: unknown, table: () => string): void;
  fail(message: string): never;
}

const spec = (s: Json) => ("cron" in s ? `${s.cron} ${s.timezone}` : `every ${s.intervalMs} ms`);
const line = (s: Json) =>
  `${s.scheduleId}  ${s.status}  ${spec(s.spec)}  overlap ${s.overlap}  next ${s.nextFireAt ?? "-"}  fired ${s.fired}  skipped ${s.skipped}\n`;

/** `drover schedules create|list|get|pause|resume|backfill|delete` (docs/schedules.md). */
export function addScheduleCommands(group: Command, kit: CommandKit): void {
  group
    .command("create")
    .description("create a schedule: a cron expression (with --tz) or --every, and the DAG its runs run")
    .requiredOption("-f, --file <path>", "the DAG as JSON (a DAG, or a body {dag, input, labels})")
    .option("--cron <expr>", "cron expression (5 or 6 fields)")
    .option("--tz <zone>", "IANA time zone of the expression", "UTC")
    .option("--every <ms>", "fire every N milliseconds instead of a cron expression")
    .option("--id <scheduleId>", "the schedule's id (default: generated)")
    .option("--overlap <policy>", "skip | buffer-one | allow-all | cancel-previous", "skip")
    .option("--catch-up-ms <ms>", "fires missed by at most this still start", "60000")
    .option("--jitter-ms <ms>", "delay each fire by a deterministic 0..N ms", "0")
    .action((o: Json) => {
      if ((o.cron === undefined) === (o.every === undefined)) kit.fail("give exactly one of --cron and --every");
      let doc: Json;
      try {
        doc = JSON.parse(readFileSync(o.file, "utf8")) as Json;
      } catch (e) {
        return kit.fail(`cannot read ${o.file}: ${(e as Error).message}`);
      }
      const body = {
        ...("dag" in doc ? doc : { dag: doc }),
        ...(o.id ? { scheduleId: o.id } : {}),
        spec: o.cron !== undefined ? { cron: o.cron, timezone: o.tz } : { intervalMs: Number(o.every) },
        overlap: o.overlap,
        catchUpMs: Number(o.catchUpMs),
        jitterMs: Number(o.jitterMs),
      };
      return kit
        .client()
        .call("POST", "/v1/schedules", body)
        .then((a) => {
          const s = kit.ok(a);
          kit.print(s, () => line(s));
        });
    });
  group
    .command("list")
    .description("the tenant's schedules")
    .action(async () => {
      const body = kit.ok(await kit.client().call("GET", "/v1/schedules"));
      kit.print(body, () =>
        table([
          ["ID", "STATUS", "SPEC", "OVERLAP", "NEXT", "FIRED", "SKIPPED"],
          ...(body.schedules as Json[]).map((s) => [
            s.scheduleId,
            s.status,
            spec(s.spec),
            s.overlap,
            s.nextFireAt ?? "-",
            String(s.fired),
            String(s.skipped),
          ]),
        ]),
      );
    });
  group
    .command("get")
    .description("one schedule with its recent fires and skips")
    .argument("<id>", "ScheduleId")
    .action(async (id: string) => {
      const s = kit.ok(await kit.client().call("GET", `/v1/schedules/${id}`));
      kit.print(s, () =>
        [
          line(s),
          ...(s.recent as Json[]).map(
            (f) => `  ${f.nominalAt}  ${f.outcome}  ${f.sharedRunId ?? `${f.reason} ×${f.count}`}\n`,
          ),
        ].join(""),
      );
    });
  for (const [name, path, method, what] of [
    ["pause", "pause", "POST", "stop firing (backfills wait too) until resumed"],
    ["resume", "resume", "POST", "fire again from now on (the pause's fires are not caught up)"],
    ["delete", "", "DELETE", "delete the schedule (its runs are not touched)"],
  ] as const)
    group
      .command(name)
      .description(what)
      .argument("<id>", "ScheduleId")
      .action(async (id: string) => {
        const s = kit.ok(await kit.client().call(method, `/v1/schedules/${id}${path ? `/${path}` : ""}`));
        kit.print(s, () => line(s));
      });
  group
    .command("backfill")
    .description("start a run for every time the schedule names in [--from, --to] (at most 10 000)")
    .argument("<id>", "ScheduleId")
    .requiredOption("--from <time>", "ISO time")
    .requiredOption("--to <time>", "ISO time")
    .action(async (id: string, o: { from: string; to: string }) => {
      const body = kit.ok(await kit.client().call("POST", `/v1/schedules/${id}/backfill`, o));
      kit.print(body, () => `${id}  backfill ${body.backfillId}: ${body.fires} run(s) to start\n`);
    });
}
