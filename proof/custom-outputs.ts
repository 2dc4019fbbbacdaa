import { createHash } from "node:crypto";
import type { NatsConnection } from "@nats-io/transport-node";
import { validateExecutionLog } from "../aggregates/replay-validation.ts";
import { canonicalJson } from "../aggregates/step-inputs.ts";
import type { DagInput } from "../contracts/index.ts";
import { createOutputStore } from "../platform/output-store.ts";
import type { StreamLayout, StoredEvent } from "../streams/index.ts";
import type { AssertionResult } from "./assertions.ts";
import { chainOutput } from "./custom-worker.ts";

const sha256 = (s: string): string => createHash("sha256").update(s).digest("hex");

/**
 * The `run.completed` outputDigest an uninterrupted run of the custom chain has: every step's output
 * computed offline (`chainOutput` over its predecessor's, `{ sleptMs }` for a timer), digested the
 * way the runtime digests a run (its steps' output digests, by step id).
 */
export function expectedRunDigest(dag: DagInput): string {
  const outputs = new Map<string, unknown>();
  for (const s of dag.steps) {
    const p = s.params as { durationMs: number; pad?: number };
    const prev = s.dependsOn?.[0] === undefined ? null : outputs.get(s.dependsOn[0]);
    outputs.set(
      s.id,
      s.kind === "sleep" ? { sleptMs: p.durationMs } : chainOutput(s.id, { prev: prev as never, pad: p.pad ?? 0 }),
    );
  }
  const digests = [...outputs].map(([id, out]) => [id, sha256(canonicalJson(out))] as const);
  return sha256(canonicalJson(digests.sort(([a], [b]) => (a < b ? -1 : 1))));
}

/**
 * `--workload custom`: every run completed with exactly the output an uninterrupted run has (so no
 * step after a kill read a wrong or missing predecessor output, inline or stored), and the object
 * store held outputs (the padded steps really went there).
 */
export function outputAssertion(
  log: readonly StoredEvent[],
  runs: readonly { sharedRunId: string; dag: DagInput }[],
  stored: number,
): AssertionResult {
  const digests = new Map<DagInput, string>();
  const want = new Map(
    runs.map((r) => {
      if (!digests.has(r.dag)) digests.set(r.dag, expectedRunDigest(r.dag));
      return [r.sharedRunId, digests.get(r.dag)!] as const;
    }),
  );
  const wrong: string[] = [];
  for (const e of log) {
    if (e.event.type !== "run.completed") continue;
    const id = e.subject.split(".").at(-2) ?? "";
    const expected = want.get(id);
    if (expected !== undefined && e.event.data.outputDigest !== expected) wrong.push(`${id} at seq ${e.seq}`);
  }
  const ok = wrong.length === 0 && stored > 0;
  return {
    name: "outputs: every custom run's output equals an uninterrupted run's",
    ok,
    violations: wrong.length + (stored > 0 ? 0 : 1),
    detail: ok
      ? `${runs.length} runs end with their uninterrupted output digests (${[...digests.values()].map((d) => `${d.slice(0, 12)}…`).join(", ")}); ${stored} step outputs read back from the object store`
      : wrong.length > 0
        ? `wrong output: ${wrong.slice(0, 3).join(", ")}`
        : "no step output went to the object store",
  };
}

/** The texts of every object-store output the log references, for replay validation (object name → text). */
export async function readStoredOutputs(
  nc: NatsConnection,
  layout: StreamLayout,
  log: readonly StoredEvent[],
): Promise<Map<string, string>> {
  const os = createOutputStore(nc, layout);
  const texts = new Map<string, string>();
  for (const e of log) {
    if (e.event.type !== "exec.step-completed" || !e.event.data.outputRef) continue;
    const ref = e.event.data.outputRef;
    if (!texts.has(ref.name)) texts.set(ref.name, new TextDecoder().decode(await os.get(ref)));
  }
  return texts;
}

/**
 * Replay validation's negative control on the proof's own log: one recorded custom output kept
 * inline and one kept in the object store each get a tampered outputDigest, and the stored one also
 * tampered bytes; each must be a divergence (`output-rederivation`) at exactly that event's sequence.
 */
export function tamperAssertion(
  log: readonly StoredEvent[],
  stored: ReadonlyMap<string, string>,
  dag: DagInput,
): AssertionResult {
  const custom = new Set(dag.steps.filter((s) => s.kind === "custom").map((s) => s.id));
  const completions = log.filter((e) => e.event.type === "exec.step-completed" && custom.has(e.event.data.stepId));
  const inline = completions.find((e) => e.event.type === "exec.step-completed" && !e.event.data.outputRef);
  const kept = completions.find((e) => e.event.type === "exec.step-completed" && e.event.data.outputRef);
  const problems: string[] = [];
  const expectDivergence = (what: string, target: StoredEvent | undefined, tampered: StoredEvent[], texts = stored) => {
    if (!target) return problems.push(`no ${what} to tamper with`);
    const r = validateExecutionLog(target.subject.split(".").at(-2) ?? "", tampered, {
      digest: sha256,
      storedOutputs: texts,
    });
    if (r.kind !== "divergence" || r.divergence.invariant !== "output-rederivation" || r.divergence.seq !== target.seq)
      problems.push(
        `${what} at seq ${target.seq}: ${r.kind === "divergence" ? `${r.divergence.invariant} at ${r.divergence.seq}` : "match"}`,
      );
    return 0;
  };
  const withDigest = (target: StoredEvent | undefined) =>
    log.map((e) =>
      e === target
        ? ({ ...e, event: { ...e.event, data: { ...e.event.data, outputDigest: "0".repeat(64) } } } as StoredEvent)
        : e,
    );
  expectDivergence("an inline custom output's digest", inline, withDigest(inline));
  expectDivergence("a stored output's digest", kept, withDigest(kept));
  const ref = kept?.event.type === "exec.step-completed" ? kept.event.data.outputRef : undefined;
  if (ref)
    expectDivergence(
      "a stored output's bytes",
      kept,
      [...log],
      new Map(stored).set(ref.name, `${stored.get(ref.name)} `),
    );
  return {
    name: "replay (negative control): a tampered custom or stored output is a divergence at its sequence",
    ok: problems.length === 0,
    violations: problems.length,
    detail:
      problems.length === 0
        ? `inline digest at seq ${inline?.seq}, stored digest and bytes at seq ${kept?.seq}: each diverges there`
        : problems.join("; "),
  };
}
