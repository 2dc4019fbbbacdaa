import { isDeepStrictEqual } from "node:util";
import type { AssertionResult, KillRecord, LoggedEvent } from "./assertions.ts";
import { mapItemOutput, type MapItem } from "./custom-worker.ts";
import { CF_FANIN, CF_MAP, CF_RESOLVER, CF_SIGNAL, CF_WAIT } from "./control-flow-workload.ts";

export interface ControlFlowFacts {
  readonly runs: readonly {
    readonly tenantId: string;
    readonly sharedRunId: string;
    readonly items: readonly MapItem[];
  }[];
  readonly kills: readonly KillRecord[];
}

type Journal = readonly LoggedEvent[];
const of = <T extends LoggedEvent["event"]["type"]>(j: Journal, type: T) =>
  j.filter((e): e is LoggedEvent & { event: Extract<LoggedEvent["event"], { type: T }> } => e.event.type === type);
const completedOf = (j: Journal, stepId: string) =>
  of(j, "exec.step-completed").filter((e) => e.event.data.stepId === stepId);

/**
 * The control-flow workload's own assertions (docs/proof-and-bench.md), pure, over the whole log:
 * every map item completed exactly once across the run's executions (a kill included) and the kill
 * landed while items were in flight; the fan-in received every item's output in index order; the
 * wait opened once, was signalled while open by the tenant's `approver` token, and was resolved
 * once by that principal with the signal's sequence and payload digest.
 */
export function controlFlowAssertions(log: Journal, facts: ControlFlowFacts, prefixTokens: number): AssertionResult[] {
  const byKey = new Map<string, LoggedEvent[]>();
  for (const e of log) {
    const t = e.subject.split(".").slice(prefixTokens);
    if (t[0] !== "run" && t[0] !== "exec") continue;
    const key = `${t[0]}/${t[1]}/${t[2]}`;
    byKey.set(key, [...(byKey.get(key) ?? []), e]);
  }
  const mapFails: string[] = [],
    fanFails: string[] = [],
    waitFails: string[] = [];
  let items = 0,
    beforeKill = 0,
    afterResume = 0,
    signalledOpen = 0,
    resolvedAfterKill = 0;
  for (const r of facts.runs) {
    const run = byKey.get(`run/${r.tenantId}/${r.sharedRunId}`) ?? [];
    const execIds = [...new Set(of(run, "run.started").map((e) => e.event.data.executionId as string))];
    const journal = execIds.flatMap((x) => byKey.get(`exec/${r.tenantId}/${x}`) ?? []).sort((a, b) => a.seq - b.seq);
    const id = r.sharedRunId;
    // Map: one expansion, one completion per item, nothing outside the items.
    const expansions = of(journal, "exec.map-expanded").filter((e) => e.event.data.stepId === CF_MAP);
    if (expansions.length !== 1 || expansions[0]!.event.data.count !== r.items.length)
      mapFails.push(`${id}: ${expansions.length} expansions (count ${expansions[0]?.event.data.count})`);
    const itemDone = of(journal, "exec.step-completed").filter((e) => e.event.data.stepId.startsWith(`${CF_MAP}--`));
    const perIndex = new Map<string, number>();
    for (const e of itemDone) perIndex.set(e.event.data.stepId, (perIndex.get(e.event.data.stepId) ?? 0) + 1);
    r.items.forEach((_, i) => {
      const n = perIndex.get(`${CF_MAP}--${i}`) ?? 0;
      if (n !== 1) mapFails.push(`${id}: item ${i} completed ${n} times`);
    });
    if (perIndex.size !== r.items.length) mapFails.push(`${id}: ${perIndex.size} distinct items completed`);
    items += itemDone.length;
    const kill = facts.kills.find((k) => k.sharedRunId === id);
    const resumed = of(journal, "exec.resumed")[0];
    if (kill) {
      const before = resumed ? itemDone.filter((e) => e.seq < resumed.seq).length : -1;
      if (before < 1 || before >= r.items.length)
        mapFails.push(
          `${id}: the kill did not land while map items were in flight (${before} items done before the resume; the gate signalled ${kill.killedAtMs - kill.stepDurableAtMs} ms after item ${kill.completedAtKill} was durable)`,
        );
      else {
        beforeKill += before;
        afterResume += itemDone.length - before;
      }
    }
    // Fan-in: the map step's output and the fan-in's input are every item's output, in index order.
    const expected = r.items.map(mapItemOutput);
    const mapDone = completedOf(journal, CF_MAP);
    const fanin = completedOf(journal, CF_FANIN);
    if (mapDone.length !== 1 || !isDeepStrictEqual(mapDone[0]!.event.data.output, { items: expected, failed: [] }))
      fanFails.push(`${id}: map step completed ${mapDone.length} times or with other outputs`);
    if (fanin.length !== 1 || !isDeepStrictEqual(fanin[0]!.event.data.output, { received: expected, failed: [] }))
      fanFails.push(
        `${id}: fan-in completed ${fanin.length} times or received ${JSON.stringify(fanin[0]?.event.data.output)}`,
      );
    // Wait: opened once, one signal by the approver while open, resolved once by that signal's principal.
    const principal = `tenant:${r.tenantId}:token:${CF_RESOLVER}`;
    const signals = of(run, "run.signal-received").filter((e) => e.event.data.name === CF_SIGNAL);
    const opened = of(journal, "exec.wait-opened").filter((e) => e.event.data.stepId === CF_WAIT);
    const resolved = of(journal, "exec.wait-resolved").filter((e) => e.event.data.stepId === CF_WAIT);
    const s = signals[0];
    const w = resolved[0]?.event.data;
    if (signals.length !== 1 || s!.event.data.by !== principal)
      waitFails.push(`${id}: ${signals.length} signals, by ${s?.event.data.by}`);
    else if (opened.length !== 1 || resolved.length !== 1)
      waitFails.push(`${id}: wait opened ${opened.length} and resolved ${resolved.length} times`);
    else if (
      w!.by !== "signal" ||
      w!.principal !== principal ||
      w!.signalSeq !== s!.seq ||
      w!.payloadDigest !== s!.event.data.payloadDigest
    )
      waitFails.push(
        `${id}: resolved by ${w!.by} ${w!.principal} at signal seq ${w!.signalSeq}, not the signal at ${s!.seq}`,
      );
    else {
      if (s!.seq > opened[0]!.seq) signalledOpen++;
      else waitFails.push(`${id}: signalled before the wait opened`);
      if (resumed && resolved[0]!.seq > resumed.seq) resolvedAfterKill++;
    }
    if (completedOf(journal, CF_WAIT).length !== 1 || completedOf(journal, "finish").length !== 1)
      waitFails.push(`${id}: the wait or the step after it did not complete exactly once`);
  }
  const check = (name: string, failures: string[], okDetail: string): AssertionResult => ({
    name,
    ok: failures.length === 0,
    violations: failures.length,
    detail: failures.length === 0 ? okDetail : failures.slice(0, 5).join("; "),
  });
  return [
    check(
      "map: every map item completed exactly once, the kills landed mid-map",
      mapFails,
      `${items} items of ${facts.runs.length} maps completed once each; in the ${facts.kills.length} killed executions ${beforeKill} items completed before the kill and ${afterResume} after the resume`,
    ),
    check(
      "fan-in: every map's fan-in received every item's output in index order",
      fanFails,
      `${facts.runs.length} fan-ins received their ${facts.runs[0]?.items.length ?? 0} item outputs in order`,
    ),
    check(
      "wait: each wait signalled while open and resolved once by the signal's principal",
      waitFails,
      `${signalledOpen} waits resolved once by tenant:<t>:token:${CF_RESOLVER}, ${resolvedAfterKill} of them after a kill`,
    ),
  ];
}

/** The proof's own signals: one per run (one wait each), every one answered 202 (or 200 for a repeat). */
export function signalsAssertion(failures: readonly string[], sent: number, runs: number): AssertionResult {
  const problems = [...failures, ...(sent === runs ? [] : [`${sent} signals sent for ${runs} runs`])];
  return {
    name: "signals: every signal the proof sent through the API was accepted",
    ok: problems.length === 0,
    violations: problems.length,
    detail: problems.length === 0 ? `${sent} signals for ${runs} runs, each accepted` : problems.slice(0, 3).join("; "),
  };
}
