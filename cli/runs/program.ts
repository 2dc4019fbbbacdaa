import { readFileSync } from "node:fs";
import { Command, CommanderError, Option } from "commander";
import type { CommandIo } from "../commands/command.ts";
import { apiClient, Unavailable, type ApiAnswer, type ApiClient } from "./client.ts";
import { eventLine, runDetail, runList } from "./format.ts";
import { addForkCommands } from "./fork.ts";
import { addSignalCommand } from "./signal.ts";
import { addScheduleCommands } from "./schedules.ts";
import { addCacheCommands } from "./cache.ts";
import { addRuntimesCommand } from "./runtimes.ts";
import { addWorkersCommands } from "./workers.ts";

/** Exit codes of `drover runs …` (README "CLI"). */
export const RUNS_EXIT = { ok: 0, runNotCompleted: 1, usage: 2, unavailable: 3, notFound: 4 } as const;

class Exit extends Error {
  constructor(readonly code: number) {
    super(`exit ${code}`);
  }
}

/**
 * `drover runs …`: the tenant's runs over the HTTP API (DROVER_API_URL + DROVER_TOKEN, or --api and
 * --token). Every command takes `-o table|json`; `--help` works on every command and exits 0.
 */
export async function runsMain(argv: readonly string[], io: CommandIo): Promise<number> {
  const program = new Command("drover runs")
    .description("find, follow, cancel and rerun runs through the HTTP API")
    .exitOverride()
    .configureOutput({ writeOut: io.out, writeErr: io.err })
    .showHelpAfterError();
  const opts = () => program.opts<{ api?: string; token?: string; output: string }>();
  program
    .addOption(new Option("--api <url>", "API base URL").env("DROVER_API_URL"))
    .addOption(new Option("--token <token>", "bearer token").env("DROVER_TOKEN"))
    .addOption(new Option("-o, --output <format>", "output format").choices(["table", "json"]).default("table"));

  const client = (): ApiClient => {
    const { api, token } = { api: opts().api ?? io.env.DROVER_API_URL, token: opts().token ?? io.env.DROVER_TOKEN };
    if (!api || !token) {
      io.err("drover runs: set DROVER_API_URL and DROVER_TOKEN (or pass --api and --token)\n");
      throw new Exit(RUNS_EXIT.usage);
    }
    return apiClient(api, token);
  };
  const json = () => opts().output === "json";
  const print = (body: unknown, table: () => string) => io.out(json() ? `${JSON.stringify(body, null, 2)}\n` : table());
  const ok = (a: ApiAnswer): ApiAnswer["body"] => {
    if (a.status < 300) return a.body;
    const e = a.body.error ?? { code: `http-${a.status}`, message: JSON.stringify(a.body) };
    io.err(`drover runs: ${e.code}: ${e.message}\n`);
    throw new Exit(a.status === 404 ? RUNS_EXIT.notFound : a.status >= 500 ? RUNS_EXIT.unavailable : RUNS_EXIT.usage);
  };
  /** Follows the run to its end (printing each event when `lines`), then prints it; exit 1 unless completed. */
  const waitFor = async (c: ApiClient, id: string, lines: boolean): Promise<void> => {
    for await (const m of c.follow(id)) {
      if (m.event === "error") ok({ status: m.data.status, body: m.data });
      if (lines && m.event === "message") io.out(json() ? `${JSON.stringify(m.data)}\n` : eventLine(m.data));
      if (m.event === "end") break;
    }
    const run = ok(await c.call("GET", `/v1/runs/${id}`));
    if (!lines || !json()) print(run, () => runDetail(run));
    if (run.status !== "completed") throw new Exit(RUNS_EXIT.runNotCompleted);
  };

  const runs = program;
  runs
    .command("submit")
    .description("submit a run from a DAG file")
    .requiredOption("-f, --file <path>", "the DAG as JSON (a DAG, or a body {dag, labels, idempotencyKey})")
    .option("--label <k=v>", "a label (repeatable)", (v: string, all: string[]) => [...all, v], [] as string[])
    .option("--idempotency-key <key>", "the same key names the same run")
    .option("--wait", "wait until the run ends; exit 1 unless it completed")
    .option("--watch", "print every event of the run until it ends; exit 1 unless it completed")
    .action(async (o: { file: string; label: string[]; idempotencyKey?: string; wait?: boolean; watch?: boolean }) => {
      let doc: Record<string, unknown>;
      try {
        doc = JSON.parse(readFileSync(o.file, "utf8")) as Record<string, unknown>;
      } catch (e) {
        io.err(`drover runs submit: cannot read ${o.file}: ${(e as Error).message}\n`);
        throw new Exit(RUNS_EXIT.usage);
      }
      const body: Record<string, unknown> = "dag" in doc ? { ...doc } : { dag: doc };
      const labels = Object.fromEntries(o.label.map((l) => [l.slice(0, l.indexOf("=")), l.slice(l.indexOf("=") + 1)]));
      const c = client();
      const run = ok(
        await c.call(
          "POST",
          "/v1/runs",
          { ...body, ...(o.label.length ? { labels: { ...(body.labels as object), ...labels } } : {}) },
          o.idempotencyKey ? { "idempotency-key": o.idempotencyKey } : {},
        ),
      );
      if (o.wait || o.watch) return waitFor(c, run.sharedRunId, o.watch === true);
      print(run, () => `${run.sharedRunId}  ${run.status}\n`);
    });
  runs
    .command("list")
    .description("the tenant's runs, newest first")
    .option("--status <s>", "only these statuses (comma-separated)")
    .option(
      "--label <k=v>",
      "only runs with this label (repeatable)",
      (v: string, all: string[]) => [...all, v],
      [] as string[],
    )
    .option("--since <time>", "only runs submitted at or after this ISO time")
    .option("--limit <n>", "at most this many", "20")
    .option("--cursor <c>", "the page after this cursor (printed as `next`)")
    .action(async (o: { status?: string; label: string[]; since?: string; limit: string; cursor?: string }) => {
      const q = new URLSearchParams();
      if (o.status) q.set("status", o.status);
      for (const l of o.label) q.append("label", l);
      if (o.since) q.set("since", o.since);
      q.set("limit", o.limit);
      if (o.cursor) q.set("cursor", o.cursor);
      const body = ok(await client().call("GET", `/v1/runs?${q}`));
      print(body, () => runList(body));
    });
  runs
    .command("get")
    .description("one run with its steps")
    .argument("<id>", "SharedRunId")
    .action(async (id: string) => {
      const run = ok(await client().call("GET", `/v1/runs/${id}`));
      print(run, () => runDetail(run));
    });
  runs
    .command("watch")
    .description("print each event of the run as it happens, until it ends; exit 1 unless it completed")
    .argument("<id>", "SharedRunId")
    .action((id: string) => waitFor(client(), id, true));
  runs
    .command("wait")
    .description("wait until the run ends, then print it; exit 1 unless it completed")
    .argument("<id>", "SharedRunId")
    .action((id: string) => waitFor(client(), id, false));
  runs
    .command("events")
    .description("the run's events so far, in stream order")
    .argument("<id>", "SharedRunId")
    .action(async (id: string) => {
      const body = ok(await client().call("GET", `/v1/runs/${id}/events`));
      print(body, () => (body.events as Record<string, unknown>[]).map(eventLine).join(""));
    });
  runs
    .command("cancel")
    .description("ask to cancel the run (idempotent); it ends `cancelled`")
    .argument("<id>", "SharedRunId")
    .option("--reason <text>", "why", "")
    .action(async (id: string, o: { reason: string }) => {
      const body = ok(await client().call("POST", `/v1/runs/${id}/cancel`, { reason: o.reason }));
      print(body, () => `${id}  ${body.outcome}  (status ${body.run.status})\n`);
    });
  runs
    .command("upgrade")
    .description("move a started run to a newer worker version that offers every kind its remaining steps need")
    .argument("<id>", "SharedRunId")
    .option("--version <v>", "the worker version (sha256); default: the tenant's current one")
    .option("--tenant <id>", "operators: the run's tenant")
    .action(async (id: string, o: { version?: string; tenant?: string }) => {
      const q = o.tenant ? `?tenant=${encodeURIComponent(o.tenant)}` : "";
      const body = ok(
        await client().call("POST", `/v1/runs/${id}/upgrade${q}`, o.version ? { version: o.version } : {}),
      );
      print(body, () =>
        body.outcome === "upgraded"
          ? `${id}  upgraded  ${String(body.fromVersion).slice(0, 12)} -> ${String(body.toVersion).slice(0, 12)}  (kinds ${body.kinds.join(",") || "none"})\n`
          : `${id}  already on ${String(body.toVersion).slice(0, 12)}\n`,
      );
    });
  runs
    .command("rerun")
    .description("submit a new run with the same DAG and labels, linked to this one")
    .argument("<id>", "SharedRunId")
    .action(async (id: string) => {
      const run = ok(await client().call("POST", `/v1/runs/${id}/rerun`));
      print(run, () => `${run.sharedRunId}  ${run.status}  (rerun of ${id})\n`);
    });

  const kit = (what: string) => ({
    client,
    ok,
    print,
    fail: (message: string): never => {
      io.err(`drover ${what}: ${message}\n`);
      throw new Exit(RUNS_EXIT.usage);
    },
  });
  addForkCommands(runs, kit("runs"));
  addSignalCommand(runs, kit("runs"));
  // `drover schedules …` (cli/drover.ts routes it here): the same client, checks and output.
  addScheduleCommands(
    program.command("schedules").description("create, list, pause, resume, backfill and delete schedules"),
    kit("schedules"),
  );
  // `drover cache …` (cli/drover.ts routes it here): the tenant's step cache keys.
  addCacheCommands(program.command("cache").description("list and clear the tenant's step cache keys"), kit("cache"));
  // `drover runtimes` (operators; cli/drover.ts routes it here): worker versions, drain, pinned runs.
  addRuntimesCommand(program.command("runtimes"), kit("runtimes"));
  // `drover workers [deploy]` (cli/drover.ts routes it here): the tenant's worker deploys.
  addWorkersCommands(program.command("workers"), kit("workers"));

  try {
    await program.parseAsync([...argv], { from: "user" });
    return RUNS_EXIT.ok;
  } catch (e) {
    if (e instanceof Exit) return e.code;
    if (e instanceof CommanderError) return e.exitCode === 0 ? RUNS_EXIT.ok : RUNS_EXIT.usage;
    if (e instanceof Unavailable) {
      io.err(`drover runs: ${e.message}\n`);
      return RUNS_EXIT.unavailable;
    }
    throw e;
  }
}
