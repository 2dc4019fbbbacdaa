/** Plain-text renderings of API answers for `-o table` (the default); `-o json` prints the answer as is. */
type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

export function table(rows: readonly (readonly string[])[]): string {
  if (rows.length === 0) return "";
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? "").length)));
  return (
    rows
      .map((r) =>
        r
          .map((c, i) => c.padEnd(widths[i]!))
          .join("  ")
          .trimEnd(),
      )
      .join("\n") + "\n"
  );
}

export function runList(body: Json): string {
  const rows = [
    ["RUN", "STATUS", "DAG", "STEPS", "SUBMITTED", "LABELS"],
    ...(body.runs as Json[]).map((r) => [
      r.sharedRunId,
      r.status,
      r.dagName ?? "",
      String(r.stepCount),
      r.submittedAt ?? "",
      Object.entries(r.labels as Record<string, string>)
        .map(([k, v]) => `${k}=${v}`)
        .join(","),
    ]),
  ];
  return table(rows) + (body.next ? `next page: --cursor ${body.next}\n` : "");
}

export function runDetail(run: Json): string {
  const head = [
    `run       ${run.sharedRunId}`,
    `status    ${run.status}${run.lastReason ? ` (${run.lastReason})` : ""}`,
    ...(run.waitingFor ? [`waiting   ${run.waitingFor}`] : []),
    ...(run.priority ? [`priority  ${run.priority}`] : []),
    `tenant    ${run.tenantId}`,
    ...(run.rerunOf ? [`rerun of  ${run.rerunOf}`] : []),
    ...(run.parent ? [`parent    ${run.parent.sharedRunId} (step ${run.parent.stepId})`] : []),
    ...((run.children ?? []) as Json[]).map((c) => `child     ${c.sharedRunId} (step ${c.stepId})`),
    ...(run.cancelRequested ? [`cancel    requested by ${run.cancelRequested.by}: ${run.cancelRequested.reason}`] : []),
    ...(Object.keys(run.labels ?? {}).length
      ? [
          `labels    ${Object.entries(run.labels as Record<string, string>)
            .map(([k, v]) => `${k}=${v}`)
            .join(", ")}`,
        ]
      : []),
    "",
  ].join("\n");
  return (
    head +
    "\n" +
    stepTable(run.steps as Json[]) +
    mapTable(run.steps as Json[]) +
    waitTable((run.waits ?? []) as Json[])
  );
}

/** The run's map steps' item counts (docs/control-flow.md "Map"); empty when it has none. */
export function mapTable(steps: readonly Json[]): string {
  const maps = steps.filter((s) => s.items);
  if (maps.length === 0) return "";
  return (
    "\n" +
    table([
      ["MAP STEP", "ITEMS", "COMPLETED", "FAILED", "OPEN"],
      ...maps.map((s) => [
        s.id,
        s.items.total === null ? "not expanded" : String(s.items.total),
        String(s.items.completed),
        String(s.items.failed),
        String(s.items.open),
      ]),
    ])
  );
}

/** The run's waits (docs/control-flow.md "Waits"): state, deadline and who resolved each; empty when it has none. */
export function waitTable(waits: readonly Json[]): string {
  if (waits.length === 0) return "";
  return (
    "\n" +
    table([
      ["WAIT", "STEP", "STATE", "TIMES OUT", "RESOLVERS", "SIGNAL BY"],
      ...waits.map((w) => [
        w.name,
        w.stepId,
        w.state,
        w.timeoutAt ?? "",
        w.resolvers ? (w.resolvers as string[]).join(",") : "any tenant token",
        w.signal?.by ?? "",
      ]),
    ])
  );
}

export function stepTable(steps: readonly Json[]): string {
  return table([
    ["STEP", "KIND", "STATE", "ATTEMPTS", "DURATION", "NOTE"],
    ...steps.map((s) => [
      s.id,
      s.kind,
      s.state,
      String(s.attempts),
      s.durationMs === null ? "" : `${s.durationMs}ms`,
      note(s),
    ]),
  ]);
}

/** Why a skipped step did not run, or a failed step's last error (first line, cut). */
function note(s: Json): string {
  const skip = s.skip as Json | null | undefined;
  if (skip) return `${skip.reason}: ${skip.detail}`.slice(0, 120);
  if (s.state === "failed" && typeof s.lastError === "string") return s.lastError.split("\n")[0]!.slice(0, 120);
  return "";
}

/** One line per event of a run's feed. */
export function eventLine(data: Json): string {
  const e = data.event as Json;
  const d = (e.data ?? {}) as Json;
  const what = d.stepId ? ` ${d.stepId}${d.attempt ? ` (attempt ${d.attempt})` : ""}` : "";
  return `${data.time ?? e.occurredAt}  #${data.seq}  ${e.type}${what}\n`;
}
