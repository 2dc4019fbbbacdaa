import type { DagDefinition, DroverEvent } from "../../../contracts/index.ts";

/** One wait step of a run as `GET /v1/runs/:id` shows it (docs/control-flow.md "Waits"). */
export interface WaitView {
  readonly stepId: string;
  readonly name: string;
  /**
   * `pending` (not opened yet), `open` (waiting for its signal), `resolved`, `timed-out`,
   * `superseded` (a trigger-`any` dependent went on another wait first), `skipped` (its condition or
   * trigger skipped it), or `ended` (the run ended first).
   */
  readonly state: "pending" | "open" | "resolved" | "timed-out" | "superseded" | "skipped" | "ended";
  readonly timeoutAt: string | null;
  readonly onTimeout: "fail" | "continue";
  /** Who may resolve it (`token:<name>`, `role:<role>`); null: every token of the run's tenant. */
  readonly resolvers: readonly string[] | null;
  readonly schema: Record<string, unknown> | null;
  /** The run's signal of this name (it may have arrived before the wait opened), with its verified principal. */
  readonly signal: {
    readonly by: string;
    readonly payloadDigest: string;
    readonly signalId: string | null;
    readonly seq: number;
  } | null;
}

/** Each wait step's state from the run's and its executions' events, in stream order. Pure. */
export function waitViews(
  dag: DagDefinition,
  events: readonly { readonly seq: number; readonly event: DroverEvent }[],
  runStatus: string,
): WaitView[] {
  const ended = ["completed", "failed", "cancelled", "rejected"].includes(runStatus);
  return dag.steps.flatMap((step) => {
    if (step.kind !== "wait") return [];
    const p = step.params;
    let timeoutAt: string | null = null;
    let by: "signal" | "timeout" | "superseded" | "skipped" | undefined;
    let signal: WaitView["signal"] = null;
    for (const { seq, event: e } of events) {
      if (e.type === "exec.wait-opened" && e.data.stepId === step.id) timeoutAt ??= e.data.timeoutAt;
      if (e.type === "exec.wait-resolved" && e.data.stepId === step.id) by ??= e.data.by;
      if (e.type === "exec.step-skipped" && e.data.stepId === step.id)
        by ??= e.data.reason === "superseded" ? "superseded" : "skipped";
      if (e.type === "run.signal-received" && e.data.name === p.name && signal === null)
        signal = { by: e.data.by, payloadDigest: e.data.payloadDigest, signalId: e.data.signalId ?? null, seq };
    }
    const state: WaitView["state"] =
      by === "signal"
        ? "resolved"
        : by === "timeout"
          ? "timed-out"
          : by !== undefined
            ? by
            : ended
              ? "ended"
              : timeoutAt !== null
                ? "open"
                : "pending";
    return [
      {
        stepId: step.id,
        name: p.name,
        state,
        timeoutAt,
        onTimeout: p.onTimeout,
        resolvers: p.resolvers ?? null,
        schema: p.schema ?? null,
        signal,
      },
    ];
  });
}
