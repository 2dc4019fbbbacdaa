import { readFileSync } from "node:fs";

/**
 * Where the quiet tenant's runs waited in a flood e2e (docs/security.md "Floods"), stage by stage, p50 / p99:
 *   DROVER_FLOOD_DUMP=/tmp/f.jsonl DROVER_ADMISSION_TRACE=/tmp/f.trace DROVER_ADMISSION_TRACE_TENANT=t-steady \
 *     npx vitest run --project e2e test/e2e/fairness-flood.e2e.test.ts
 *   node --import tsx bench/flood-stages.ts /tmp/f.jsonl /tmp/f.trace
 * Stages: http (the POST leaving the client → `submitted` stored; outside the measured latency),
 * deliver (stored → admission's follower has it), wait (→ a pass takes it), claim (→ quota claim and
 * slot reservation answered), admit (→ `admitted` appended), dispatch (→ `dispatched` stored), and
 * the claim's parts (pre: deciding before the call; held: until its batch left; redis: the batch's round
 * trip; back: its answer reaching the placement), admission's event-loop stalls (a 5 ms timer late by over 15 ms) with how many were its own work
 * (its CPU over the stall ≥ 70 % of it) rather than waiting for a core.
 */
const [dumpFile, traceFile] = process.argv.slice(2);
if (!dumpFile || !traceFile) throw new Error("usage: flood-stages.ts <dump.jsonl> <admission.trace>");
const lines = (f: string) =>
  readFileSync(f, "utf8")
    .split("\n")
    .filter((l) => l.trim() !== "")
    .map((l) => JSON.parse(l) as Record<string, unknown>);
const { posted, baseline, underFlood } = JSON.parse(readFileSync(`${dumpFile}.posted.json`, "utf8")) as {
  posted: Record<string, [number, number]>;
  baseline: string[];
  underFlood: string[];
};
const at = new Map<string, number>();
let drained = 0;
for (const e of lines(dumpFile)) {
  const k = `${String(e.ty)}/${String(e.id)}`;
  if (!at.has(k)) at.set(k, e.t as number);
  if (e.te === "t-flood" && e.ty === "run.dispatched") drained = Math.max(drained, e.t as number);
}
const stage = new Map<string, Map<string, number>>();
const stalls: { ms: number; cpuMs: number }[] = [];
const passes: { start: number; end: number }[] = [];
let expresses = 0;
const noJoin = { place: 0, none: 0 };
for (const o of lines(traceFile)) {
  if (o.ev === "late") stalls.push({ ms: o.ms as number, cpuMs: o.cpuMs as number });
  else if (o.ev === "express") expresses++;
  else if (o.ev === "no-join") noJoin[o.place ? "place" : "none"]++;
  else if (o.ev === "pass") passes.push({ start: o.start as number, end: (o.start as number) + (o.ms as number) });
  else if (typeof o.run === "string") {
    const m = stage.get(o.run) ?? new Map<string, number>();
    if (!m.has(o.ev as string)) m.set(o.ev as string, o.t as number);
    if (o.ev === "taken") m.set("pass", o.pass as number);
    if (o.ev === "batch") {
      m.set("sent", o.sent as number);
      m.set("answered", o.answered as number);
      if (typeof o.ran === "number") m.set("ran", o.ran);
      m.set("size", o.size as number);
      m.set("pos", o.pos as number);
    }
    stage.set(o.run, m);
  }
}
const pct = (xs: number[], p: number) =>
  xs.length === 0 ? "-" : [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.ceil(p * xs.length) - 1)];
const table = (name: string, ids: string[]) => {
  const spans: Record<string, number[]> = {
    total: [],
    http: [],
    deliver: [],
    wait: [],
    claim: [],
    " pre": [],
    " held": [],
    " redis": [],
    "  to run": [],
    "  reply": [],
    " back": [],
    admit: [],
    dispatch: [],
  };
  const add = (k: string, a?: number, b?: number) =>
    a !== undefined && b !== undefined && spans[k]!.push(Math.round(b - a));
  for (const id of ids) {
    const s = at.get(`run.submitted/${id}`);
    const d = at.get(`run.dispatched/${id}`);
    const t = stage.get(id);
    add("total", s, d);
    add("http", posted[id]?.[0], s);
    add("deliver", s, t?.get("seen"));
    add("wait", t?.get("seen"), t?.get("taken"));
    add("claim", t?.get("taken"), t?.get("claimed"));
    // The claim's parts: the decision before the call, held for the batch's flush, the batch's Redis
    // round trip, and its answer reaching the placement (admission's event loop).
    add(" pre", t?.get("taken"), t?.get("claim-call"));
    add(" held", t?.get("claim-call"), t?.get("sent"));
    add(" redis", t?.get("sent"), t?.get("answered"));
    add(" back", t?.get("answered"), t?.get("claimed"));
    // Redis's round trip split at Redis's clock: admission's write and redis-server waking (to run),
    // the reply and admission waking to read it (reply).
    add("  to run", t?.get("sent"), t?.get("ran"));
    add("  reply", t?.get("ran"), t?.get("answered"));
    add("admit", t?.get("claimed"), t?.get("admitted"));
    add("dispatch", t?.get("admitted"), d);
  }
  const queued = ids.filter((id) => at.has(`run.queued-globally/${id}`)).length;
  console.log(`${name} (${ids.length} runs, ${queued} queued first), ms p50 / p99:`);
  for (const [k, xs] of Object.entries(spans)) console.log(`  ${k.padEnd(9)} ${pct(xs, 0.5)} / ${pct(xs, 0.99)}`);
  // How passes met the runs: seen while a pass ran that did not take it (`in-pass`: it waited for
  // that pass to end), taken by a pass begun before admission had it (`this pass`: joined it or came
  // during its capacity read), or by a pass begun after (`next`); the wait stage's p50 / p99 of each.
  const metOf = (id: string) => {
    const t = stage.get(id);
    const seen = t?.get("seen");
    const pass = t?.get("pass");
    if (seen === undefined || pass === undefined) return "?";
    if (pass < seen) return "this pass";
    return passes.some((p) => p.start <= seen && p.end >= seen && p.start !== pass) ? "in-pass" : "next";
  };
  const byMet = new Map<string, number[]>();
  for (const id of ids) {
    const t = stage.get(id);
    const w = (t?.get("taken") ?? NaN) - (t?.get("seen") ?? NaN);
    if (!Number.isNaN(w)) byMet.set(metOf(id), [...(byMet.get(metOf(id)) ?? []), w]);
  }
  console.log(
    `  met: ${[...byMet].map(([k, ws]) => `${k} ${ws.length} (wait ${pct(ws, 0.5)} / ${pct(ws, 0.99)})`).join(", ")}`,
  );
  // The slowest runs stage by stage, and how the pass met each (as above).
  const total = (id: string) => (at.get(`run.dispatched/${id}`) ?? 0) - (at.get(`run.submitted/${id}`) ?? 0);
  console.log("  slowest: total = deliver + wait + claim + admit + dispatch (ms); how the pass met it");
  for (const id of [...ids].sort((a, b) => total(b) - total(a)).slice(0, 8)) {
    const t = stage.get(id);
    const seen = t?.get("seen");
    const d = (a?: number, b?: number) => (a !== undefined && b !== undefined ? String(b - a) : "?");
    const during = seen === undefined ? undefined : passes.find((p) => p.start <= seen && p.end >= seen);
    const m = metOf(id);
    const met =
      m === "in-pass" && during && seen !== undefined
        ? `in-pass (seen ${seen - during.start} ms into a ${during.end - during.start} ms pass)`
        : m;
    const q = at.has(`run.queued-globally/${id}`) ? " queued first" : "";
    const b =
      t?.get("sent") === undefined
        ? ""
        : `; claim ${d(t.get("taken"), t.get("claim-call"))}+${d(t.get("claim-call"), t.get("sent"))}+${d(t.get("sent"), t.get("answered"))}+${d(t.get("answered"), t.get("claimed"))} (batch ${t.get("pos")! + 1}/${t.get("size")})`;
    console.log(
      `    ${total(id)} = ${d(at.get(`run.submitted/${id}`), seen)} + ${d(seen, t?.get("taken"))} + ${d(t?.get("taken"), t?.get("claimed"))} + ${d(t?.get("claimed"), t?.get("admitted"))} + ${d(t?.get("admitted"), at.get(`run.dispatched/${id}`))}; ${met}${q}${b}`,
    );
  }
};
table("alone", baseline);
table(
  "under the flood",
  underFlood.filter((id) => (at.get(`run.submitted/${id}`) ?? Infinity) < drained),
);
console.log(
  `passes ${passes.length}; quiet-tenant arrivals during a pass's pull: joined (express) ${expresses}, not joined ${noJoin.place} (a place in the pass's view) + ${noJoin.none} (none)`,
);
const own = stalls.filter((s) => s.cpuMs >= 0.7 * s.ms);
console.log(
  `admission's loop stalled ${stalls.length}× (${stalls.reduce((a, s) => a + s.ms, 0)} ms), ${own.length} of them its own work`,
);
