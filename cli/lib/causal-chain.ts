import { aggregateIdOf, type RecordedEvent, type ValidationResult } from "../../aggregates/replay-validation.ts";
import { describeEvent, type Phase } from "./describe-event.ts";

/** One line of a causal chain: one event, or a run of consecutive step events of one execution. */
export interface ChainEntry {
  readonly seq: number;
  /** Set when the entry summarises several events: the last one's sequence. */
  readonly toSeq?: number;
  readonly phase: Phase;
  /** The aggregate it happened to, e.g. `run run-1`, `exec exec-…`, `runtime rt-a`. */
  readonly subject: string;
  readonly text: string;
}

const isStep = (r: RecordedEvent) => r.event.type === "exec.step-completed" || r.event.type === "exec.step-failed";

/**
 * The causal chain of a log in stream order (the one total order), one entry per event except that
 * consecutive step events of one execution collapse into one summary — a 50-step DAG stays readable,
 * and the sequences still say exactly where each summary starts and ends.
 */
export function causalChain(log: readonly RecordedEvent[]): ChainEntry[] {
  const out: ChainEntry[] = [];
  let steps: RecordedEvent[] = [];
  const flush = () => {
    const first = steps[0],
      last = steps.at(-1);
    if (first && last)
      out.push({
        seq: first.seq,
        toSeq: last.seq,
        phase: "steps",
        subject: subjectOf(first),
        text: summarizeSteps(steps),
      });
    steps = [];
  };
  for (const r of log) {
    if (isStep(r)) {
      if (steps[0] && subjectOf(steps[0]) !== subjectOf(r)) flush();
      steps.push(r);
      continue;
    }
    flush();
    const [phase, text] = describeEvent(r.event);
    out.push({ seq: r.seq, phase, subject: subjectOf(r), text });
  }
  flush();
  return out;
}

const subjectOf = (r: RecordedEvent) => `${r.event.type.split(".")[0]} ${aggregateIdOf(r)}`;

function summarizeSteps(steps: readonly RecordedEvent[]): string {
  const done: string[] = [],
    failed: string[] = [];
  for (const r of steps) {
    const d = r.event.data as { stepId: string; attempt: number };
    const label = d.attempt > 1 ? `${d.stepId}#${d.attempt}` : d.stepId;
    (r.event.type === "exec.step-completed" ? done : failed).push(
      r.event.type === "exec.step-completed" ? label : `${d.stepId}#${d.attempt}`,
    );
  }
  const parts = [`${done.length} completed${done.length ? ` (${done.join(", ")})` : ""}`];
  if (failed.length) parts.push(`${failed.length} failed attempt(s) (${failed.join(", ")})`);
  return `steps: ${parts.join("; ")}`;
}

/** The chain as aligned text lines. */
export function formatChain(entries: readonly ChainEntry[]): string {
  const seqs = entries.map((e) => (e.toSeq !== undefined && e.toSeq !== e.seq ? `#${e.seq}-${e.toSeq}` : `#${e.seq}`));
  const w = Math.max(0, ...seqs.map((s) => s.length));
  // Forensics ids are long: cap the column so one long id does not push every line right.
  const ws = Math.min(40, Math.max(0, ...entries.map((e) => e.subject.length)));
  return (
    entries
      .map((e, i) => `${(seqs[i] ?? "").padStart(w)}  ${e.phase.padEnd(10)}  ${e.subject.padEnd(ws)}  ${e.text}`)
      .join("\n") + "\n"
  );
}

/** The validation verdict: `replay: match …` or `replay: DIVERGENCE at seq N …`. */
export function formatResult(r: ValidationResult): string {
  if (r.kind === "match")
    return `replay: match (${r.scope}; ${r.checked} events checked${r.notes.length ? `; ${r.notes.join("; ")}` : ""})\n`;
  const d = r.divergence;
  return `replay: DIVERGENCE at seq ${d.seq} [${d.invariant}] in ${d.scope}: ${d.message}\n`;
}
