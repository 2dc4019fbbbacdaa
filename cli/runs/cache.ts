import type { Command } from "commander";
import { table } from "./format.ts";
import type { CommandKit } from "./schedules.ts";

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const tenantQuery = (o: Json, first: boolean) =>
  o.tenant ? `${first ? "?" : "&"}tenant=${encodeURIComponent(o.tenant)}` : "";

/** `drover cache list|clear` (docs/step-cache.md "Inspect and clear"): the tenant's step cache keys over the API. */
export function addCacheCommands(group: Command, kit: CommandKit): void {
  group
    .command("list")
    .description("the tenant's step cache keys: the run and step each points at, and when it was stored")
    .option("--limit <n>", "at most this many keys (≤ 1000)", "100")
    .option("--after <key>", "continue after a previous answer's next key")
    .option("--tenant <id>", "operators: the tenant whose keys to list")
    .action(async (o: Json) => {
      const q = `?limit=${Number(o.limit)}${o.after ? `&after=${o.after}` : ""}${tenantQuery(o, false)}`;
      const body = kit.ok(await kit.client().call("GET", `/v1/step-cache${q}`));
      kit.print(body, () => {
        const rows = [
          ["KEY", "RUN", "STEP", "STORED"],
          ...(body.entries as Json[]).map((e) => [String(e.key).slice(0, 16), e.sharedRunId, e.stepId, e.storedAt]),
        ];
        return `${table(rows)}${body.next ? `more keys: --after ${body.next}\n` : ""}`;
      });
    });
  group
    .command("clear")
    .description("clear step cache keys of the tenant: the next run of such a step executes again")
    .argument("[keys...]", "the keys to clear (sha256, as `cache list -o json` shows them)")
    .option("--all", "every key `cache list` shows (up to 1000 at a time)")
    .option("--tenant <id>", "operators: the tenant whose keys to clear")
    .action(async (keys: string[], o: Json) => {
      let todo = keys;
      if (o.all) {
        const listed = kit.ok(await kit.client().call("GET", `/v1/step-cache?limit=1000${tenantQuery(o, false)}`));
        todo = [...keys, ...(listed.entries as Json[]).map((e) => String(e.key))];
      }
      if (todo.length === 0) kit.fail("name the keys to clear, or --all");
      const answers: Json[] = [];
      for (const key of todo)
        answers.push(kit.ok(await kit.client().call("DELETE", `/v1/step-cache/${key}${tenantQuery(o, true)}`)));
      kit.print({ cleared: answers }, () => answers.map((a) => `${a.key}  ${a.outcome}\n`).join(""));
    });
}
